"""The operator console in a real browser: Debian's Chromium, driven by Playwright (the system
browser through executable_path, no browser download). Run by tests/it/console.rs with one JSON
argument (the console's URL, the events and destination it set up, where to put the screenshot).

One browser session walks the console as an operator would and fails (exit 1) on any failed
expectation and on any error in the page's console or an uncaught exception.
"""

import json
import re
import sys
import time

from playwright.sync_api import expect, sync_playwright


def main(cfg):
    problems = []
    base = cfg["url"].rstrip("/")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=cfg["chromium"], args=["--no-sandbox"], headless=True
        )
        # A zone that is not UTC: the Events page shows times in the browser's zone.
        context = browser.new_context(
            viewport={"width": 1360, "height": 860}, timezone_id="America/New_York"
        )
        # Generous: `make test` runs every test at once on a couple of cores.
        context.set_default_timeout(30_000)
        expect.set_options(timeout=30_000)
        # Chromium reports every 4xx answer as a console error; one the walk provokes on purpose
        # (the refused bind's 409) is named here while it is expected, and only then.
        expected = []

        def on_console(m):
            if m.type == "error" and not any(e in m.text for e in expected):
                problems.append(f"console {m.type}: {m.text}")

        def watched(page):
            page.on("console", on_console)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            return page

        page = watched(context.new_page())
        # Only the login URL the console printed opens a session (its cookie then serves every
        # page of this context); without it every page answers 401.
        denied = context.request.get(base + "/events")
        if denied.status != 401:
            problems.append(f"/events without a session answered {denied.status}, not 401")
        page.goto(cfg["login"])
        expect(page).to_have_url(re.compile(r"/events$"))

        # An Events page searching for an event not ingested yet (the test ingests it once the
        # first replay is processed): it must appear there without a reload.
        live = watched(context.new_page())
        live.goto(base + "/events?q=" + cfg["late"])
        expect(live.locator("#live")).to_contain_text("No events match.")

        # Events: filter to the failed event (source, status, then the search by its id).
        page.goto(base + "/events")
        expect(page.locator("h1")).to_have_text("Events")
        page.fill("input[name=source]", "stripe")
        page.select_option("select[name=status]", "failed")
        page.fill("input[name=q]", cfg["failed"])
        page.click("form.filters button[type=submit]")
        expect(page).to_have_url(re.compile(r"status=failed"))
        rows = page.locator("#events tbody tr")
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_attribute("data-event", cfg["failed"])

        # Its page: the history's failure, the body on demand.
        rows.first.locator("a").click()
        expect(page.locator("#status")).to_have_attribute("data-status", "failed")
        expect(page.locator("#history")).to_contain_text("card declined")
        page.click("text=Show the body")
        expect(page.locator("#body-pretty")).to_contain_text(cfg["failed"])
        expect(page.locator("#headers")).to_contain_text("masked")

        # Replay it: pending again, then processed by the test's processor; the status updates
        # itself while the page is open.
        expect(page.locator("#deliveries")).to_contain_text("upstream down")
        # Read by key per listed destination; the command that finds a removed one's is named.
        expect(page.locator("#removed-deliveries")).to_contain_text(
            "inboxctl deliveries list --source stripe --event-id " + cfg["failed"]
        )
        # Each attempt: when (in the browser's zone), its status code, its duration, the response.
        attempts = page.locator("#deliveries tr.attempt")
        expect(attempts).to_have_count(2)
        expect(attempts.nth(1).locator("td.code")).to_have_text("503")
        expect(attempts.nth(1).locator("td.num").nth(1)).to_have_text("12")
        expect(attempts.nth(1)).to_contain_text("upstream down")
        expect(attempts.first.locator("time.local")).to_have_attribute("data-localized", "1")
        page.click("button[data-action=retry-delivery]")
        expect(page.locator(".notice")).to_contain_text("Delivery retried")
        expect(page.locator("button[data-action=retry-delivery]")).to_have_count(0)
        page.click("#replay")
        expect(page.locator(".notice")).to_contain_text("Replayed")
        expect(page.locator("#status")).to_have_attribute("data-status", "processed")
        # Without a reload by the operator: the fields, the history and the button follow the
        # title (the terminal status reloads the page), not only the badge.
        expect(page.locator("dl.fields")).to_contain_text("processed")
        expect(page.locator("dl.fields")).not_to_contain_text("pending")
        expect(page.locator("#history")).to_contain_text("replayed by ana")
        expect(page.locator("#replay")).to_contain_text("Replay anyway (it is processed)")
        page.click("text=Show the body")
        expect(page.locator("#body-pretty")).to_be_visible()
        page.screenshot(path=cfg["screenshot"].replace(".png", "-event.png"), full_page=True)

        # Quarantine: every match replayed after the confirmation naming the count.
        page.goto(base + "/quarantine?" + "q=" + cfg["bulk"])
        expect(page.locator("#quarantine tbody tr")).to_have_count(1)
        expect(page.locator("#queue-depth")).to_contain_text("notice(s)")
        page.click("#replay-all")
        expect(page.locator("h1")).to_have_text("Replay 1 failed message(s)?")
        page.click("#confirm")
        expect(page.locator("#progress")).to_contain_text("Replayed 1 of 1")
        expect(page.locator("#progress progress")).to_have_attribute("value", "1")

        # Destinations: pause, then resume.
        section = page.locator(f"section[data-destination='{cfg['destination']}']")
        page.goto(base + "/destinations")
        # Its figures are its last deliveries read by key, named as such (never a scan): those
        # of the events it wants (none: its failed deliveries were written for events it does not).
        expect(section.locator("dd.recent")).to_contain_text("at most 100")
        expect(section.locator("dd.parked")).to_contain_text("parked")
        section.locator("input[name=reason]").fill("maintenance window")
        section.locator("button[data-action=pause]").click()
        expect(page.locator(".notice")).to_contain_text("Paused")
        expect(section.locator("h2")).to_contain_text("paused")
        expect(section).to_contain_text("maintenance window")
        section.locator("button[data-action=resume]").click()
        expect(page.locator(".notice")).to_contain_text("Resumed")
        expect(section.locator("h2")).to_contain_text("active")
        expect(section.locator("details.journal")).to_contain_text("resumed")
        expect(section.locator("details.journal")).to_contain_text("ana")

        # Its two failed deliveries: retried after the confirmation naming the count.
        section.locator("button[data-action=retry]").click()
        expect(page.locator("h1")).to_contain_text("Retry 2 failed deliveries")
        page.click("#confirm")
        expect(page.locator("#progress")).to_contain_text("Retried 2 of 2")
        expect(page.locator("#progress progress")).to_have_attribute("value", "2")
        expect(page.locator("#progress")).to_contain_text("Back to the destinations")

        # A delivery's attempts on its event's page.
        ok_page = base + "/event?source=stripe&id=" + cfg["ok"]
        page.goto(ok_page)
        expect(page.locator("#deliveries")).to_contain_text("upstream down")
        expect(page.locator("#deliveries")).to_contain_text("503")

        # Its times in the browser's zone with how long ago, UTC to the millisecond on hover.
        received = page.locator("dl.fields time.local.ago").first
        expect(received).to_have_attribute("data-localized", "1")
        expect(received).to_have_attribute("title", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$"))
        expect(received).to_have_text(
            re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} (EST|EDT|GMT-5|GMT-4) \((\d+ (s|min|h|d)( \d+ (min|h))? ago|now)\)$")
        )

        # Copy buttons: the event id, and the webhook-id and a ready curl of its delivery.
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
        copy_id = page.locator("button.copy[data-copy=event-id]")
        copy_id.click()
        expect(copy_id).to_have_text("Copied")
        clip = page.evaluate("() => navigator.clipboard.readText()")
        if clip != cfg["ok"]:
            problems.append(f"the event id's copy button copied {clip!r}")
        webhook_id = page.locator("#webhook-id-0").inner_text()
        page.locator("#deliveries a.curl-link").first.click()
        curl = page.locator("#curl-0 pre.curl")
        expect(curl).to_contain_text("curl -sS -X POST 'http://127.0.0.1:9/hook'")
        expect(curl).to_contain_text("'webhook-id: " + webhook_id + "'")
        expect(curl).to_contain_text("'webhook-signature: v1,MASKED")
        expect(curl).to_contain_text('"id":"' + cfg["ok"] + '"')
        page.locator("#curl-0 button.copy").click()
        expect(page.locator("#curl-0 button.copy")).to_have_text("Copied")
        clip = page.evaluate("() => navigator.clipboard.readText()")
        if clip != curl.text_content():
            problems.append(f"the curl's copy button copied {clip[:80]!r}…")

        # The page refreshes as a whole when the event changes, whoever changed it: a second tab
        # on it, the event replayed from the first (ignored, then ignored again once processed).
        watch = watched(context.new_page())
        watch.goto(ok_page)
        expect(watch.locator("#status")).to_have_attribute("data-status", "ignored")
        page.click("#replay")
        expect(page.locator(".notice")).to_contain_text("Replayed")
        expect(watch.locator("#history")).to_contain_text("replayed by ana", timeout=60_000)
        watch.close()

        # Resend it to one chosen destination; a resend refused answers an error status naming why.
        # First the replay settles (ignored again, by the test's processor): until then the page
        # reloads itself at each change, which would reset the form being filled.
        page.goto(ok_page)
        expect(page.locator("#status")).to_have_attribute("data-status", "ignored", timeout=60_000)
        expect(page.locator("#history")).to_contain_text("replayed by ana")
        resend = page.locator("form#resend")
        resend.locator("select[name=destination]").select_option(cfg["destination"])
        resend.locator("button[data-action=resend]").click()
        expect(page).to_have_url(re.compile(r"done=resent"))
        expect(page.locator(".notice")).to_contain_text("Resent")
        page.goto(ok_page)
        resend.locator("select[name=destination]").evaluate(
            "s => { s.options[s.selectedIndex].value = 'gone-destination' }"
        )
        expected.append("the server responded with a status of 404 (Not Found)")
        with page.expect_navigation() as refused:
            resend.locator("button[data-action=resend]").click()
        if refused.value.status != 404:
            problems.append(f"a resend to no destination answered {refused.value.status}, not 404")
        expect(page.locator("#resend-refused")).to_contain_text("no destination gone-destination")
        expected.clear()

        # Wallets: the list, then the wallet its top-up credited, then the top-up's entry from
        # the ledger to the event's page.
        page.goto(base + "/wallets")
        expect(page.locator("#wallets")).to_contain_text("20.00 USD")
        page.click(f"text={cfg['tenant']}")
        expect(page.locator("#wallet")).to_contain_text("20.00 USD")
        page.click(f"#ledger a:has-text('{cfg['topup']}')")
        expect(page.locator("#wallet-entries")).to_contain_text(cfg["tenant"])
        expect(page.locator("#wallet-entries")).to_contain_text("20.00 USD")

        # The unmatched payment: listed with its amount and payer; a bind to a tenant without a
        # wallet is refused with the ledger's reason; bound to the tenant, its replay (processed by
        # the test) credits the wallet: 20.00 + 40.00 USD.
        page.goto(base + "/wallets")
        row = page.locator(f"#unmatched tr[data-payment='{cfg['payment']}']")
        expect(row).to_contain_text("40.00 USD")
        expect(row).to_contain_text("payer@example.com")
        page.screenshot(path=cfg["screenshot"].replace(".png", "-wallets.png"), full_page=True)
        row.locator("input[name=tenant]").fill(cfg["nobody"])
        row.locator("button[data-action=bind]").click()
        expect(page.locator("h1")).to_contain_text("Bind payment")
        expected.append("the server responded with a status of 409 (Conflict)")
        with page.expect_navigation() as refused:
            page.click("#confirm")
        assert refused.value.status == 409, f"a refused bind answers {refused.value.status}"
        expect(page.locator("#bind-refused")).to_contain_text("no wallet for tenant")
        expected.clear()
        page.goto(base + "/wallets")
        row.locator("input[name=tenant]").fill(cfg["tenant"])
        row.locator("button[data-action=bind]").click()
        expect(page.locator("h1")).to_contain_text(cfg["tenant"])
        page.click("#confirm")
        expect(page.locator(".notice")).to_contain_text("Bound by ana")
        page.click("#to-wallet")
        deadline = time.monotonic() + 60
        while "60.00 USD" not in page.locator("#wallet").inner_text():
            if time.monotonic() > deadline:
                problems.append("the bound payment did not credit the wallet within 60 s")
                break
            page.wait_for_timeout(200)
            page.reload()
        expect(page.locator("#ledger")).to_contain_text("40.00")
        page.goto(base + "/wallets")
        expect(page.locator("#unmatched")).to_have_count(0)

        # A hostile body and header: shown as text, nothing runs, no element injected, and the
        # signature header's value is never in the page.
        page.goto(base + "/event?source=stripe&id=" + cfg["hostile"])
        page.click("text=Show the body")
        expect(page.locator("#body-pretty")).to_contain_text("<script>window.__pwned=1</script>")
        expect(page.locator("#headers")).to_contain_text("<script>window.__pwned=4</script>")
        page.locator("#body-raw").evaluate("e => e.closest('details').open = true")
        expect(page.locator("#body-raw")).to_contain_text("onerror=")
        if page.evaluate("() => window.__pwned") is not None:
            problems.append("the hostile body ran script")
        if page.locator("main img").count() != 0:
            problems.append("the hostile body injected an element")
        if cfg["signature"] in page.content():
            problems.append("the signature header's value is in the page")

        # The late event showed up on the open page by itself (htmx polls the rows).
        expect(live.locator("#events tbody tr")).to_have_count(1)
        expect(live.locator("#events tbody tr").first).to_have_attribute("data-event", cfg["late"])

        # Auto-refresh can be paused: no poll is sent while paused, even after a reload (kept in
        # localStorage); resumed, the page polls again.
        polls = []

        def on_request(r):
            if "/events/rows" in r.url:
                polls.append(r.url)

        page.on("request", on_request)
        page.goto(base + "/events?source=stripe")
        toggle = page.locator("#live-toggle")
        expect(toggle).to_have_text("Pause auto-refresh")
        toggle.click()
        expect(toggle).to_have_attribute("data-state", "paused")
        # A poll came due (every 10 s) and was not sent; counted from then (a poll sent just
        # before the click may be reported a little later).
        expect(toggle).to_have_attribute("data-skipped", re.compile(r"^[1-9]"))
        sent = len(polls)
        # Still paused after a reload: the next poll due is not sent either.
        page.reload()
        expect(toggle).to_have_text("Resume auto-refresh")
        expect(toggle).to_have_attribute("data-skipped", re.compile(r"^[1-9]"))
        if len(polls) != sent:
            problems.append(f"{len(polls) - sent} poll(s) sent while auto-refresh was paused")
        with page.expect_request(lambda r: "/events/rows" in r.url):
            toggle.click()
            expect(toggle).to_have_attribute("data-state", "live")
        page.remove_listener("request", on_request)

        # Events again, unfiltered, for the docs' screenshot.
        page.goto(base + "/events?source=stripe")
        expect(page.locator("#events tbody tr").first).to_be_visible()
        page.screenshot(path=cfg["screenshot"])

        # Its times: in the browser's zone (New York), to the millisecond, UTC on hover.
        first_time = page.locator("#events tbody tr time.local").first
        expect(first_time).to_have_attribute("data-localized", "1")
        expect(first_time).to_have_attribute("title", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$"))
        expect(first_time).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} (EST|EDT|GMT-5|GMT-4)$"))

        # Pages of 2 by the cursor in the URL: older, older again, then back newer: the same rows.
        def shown(pg):
            return pg.locator("#events tbody tr").evaluate_all("rs => rs.map(r => r.dataset.event)")

        page.goto(base + "/events?source=stripe&rows=2")
        expect(page.locator("a[rel=prev]")).to_have_count(0)
        first = shown(page)
        page.click("a[rel=next]")
        expect(page).to_have_url(re.compile(r"before=c1\."))
        expect(page.locator("#events tbody tr")).to_have_count(2)
        second = shown(page)
        page.click("a[rel=next]")
        expect(page).to_have_url(re.compile(r"before=c1\."))
        third = shown(page)
        seen = first + second + third
        if len(seen) != 6 or len(set(seen)) != 6:
            problems.append(f"pages of 2 repeated or lost an event: {first} {second} {third}")
        page.click("a[rel=prev]")
        expect(page).to_have_url(re.compile(r"after=c1\."))
        if shown(page) != second:
            problems.append(f"the newer page of the third is not the second: {shown(page)} vs {second}")
        page.click("a[rel=prev]")
        if shown(page) != first:
            problems.append(f"the newer page of the second is not the first: {shown(page)} vs {first}")
        expect(page.locator("a[rel=prev]")).to_have_count(0)
        # A cursor that was edited is refused with a 400 that says so.
        older = page.locator("a[rel=next]").get_attribute("href")
        tampered = re.sub(r"before=c1\.([A-Za-z0-9_-]+)", lambda m: "before=c1." + m.group(1)[::-1], older)
        refused = context.request.get(base + tampered)
        if refused.status != 400 or "cursor" not in refused.text():
            problems.append(f"a tampered cursor answered {refused.status}, not a 400 naming it")

        # "/" focuses the search box.
        page.locator("h1").click()
        page.keyboard.press("/")
        expect(page.locator("#search")).to_be_focused()

        # Without JavaScript the read-only views still read: the list, and an event with its body.
        plain = browser.new_context(java_script_enabled=False)
        quiet = watched(plain.new_page())
        quiet.goto(cfg["login"])
        quiet.goto(base + "/events?q=" + cfg["ok"])
        expect(quiet.locator("#events tbody tr")).to_have_count(1)
        quiet.click(f"text={cfg['ok']}")
        quiet.click("text=Show the body")
        expect(quiet.locator("#body-pretty")).to_contain_text(cfg["ok"])
        # No dead copy buttons and no toggle: the ids stay selectable text; the curl is a page.
        expect(quiet.locator("#event-id")).to_have_text(cfg["ok"])
        expect(quiet.locator("button.copy").first).to_be_hidden()
        expect(quiet.locator("#live-toggle")).to_be_hidden()
        quiet.click("text=Reproduce with curl")
        expect(quiet.locator("pre.curl")).to_contain_text("--data-binary")
        plain.close()

        browser.close()
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
