"""The console's charts in a real browser: Debian's Chromium driven by Playwright, as
console_browser.py. Run by tests/it/console/charts.rs with one JSON argument (the console's URL,
the destination and wallet it seeded, how many bars and points each chart must show, and where
to put screenshots, if anywhere).

Fails (exit 1) on a wrong count, on any error in a page's console (a Content-Security-Policy
refusal included) and on any uncaught exception.
"""

import json
import sys

from playwright.sync_api import expect, sync_playwright


def main(cfg):
    problems = []
    base = cfg["url"].rstrip("/")
    shots = cfg.get("screenshot")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=cfg["chromium"], args=["--no-sandbox"], headless=True
        )
        context = browser.new_context(viewport={"width": 1360, "height": 860})
        context.set_default_timeout(30_000)
        expect.set_options(timeout=30_000)
        page = context.new_page()
        page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.goto(cfg["login"])

        # Events per minute by status: one bar per status and minute, the counts the seeded ones.
        page.goto(base + "/events")
        bars = page.locator("svg#events-chart rect[data-status]")
        expect(bars).to_have_count(cfg["events"]["rects"])
        total = sum(int(c) for c in bars.evaluate_all("rs => rs.map(r => r.dataset.count)"))
        if total != cfg["events"]["total"]:
            problems.append(f"the events chart counts {total} events, not {cfg['events']['total']}")
        failed = page.locator("svg#events-chart rect[data-status=failed]")
        expect(failed).to_have_count(1)
        expect(failed).to_have_attribute("data-count", str(cfg["events"]["failed"]))
        expect(page.locator("svg#events-chart")).to_have_attribute("role", "img")
        expect(page.locator("#events-chart-block figcaption")).to_contain_text(
            f"{cfg['events']['total']} events"
        )
        # The figures as a table: a row per minute with events.
        expect(page.locator("#events-chart-block table.figures tbody tr")).to_have_count(6)

        # A destination's success rate and p50/p99: a point per 15 minutes with attempts.
        page.goto(base + "/destinations")
        dest = cfg["destination"]
        section = page.locator(f"section[data-destination='{dest}']")
        points = cfg["points"]
        # Its figures: its last deliveries (those of the events it wants, read by key).
        expect(section).to_contain_text("last 3 deliveries")
        expect(section.locator("dd.recent")).to_contain_text("3 delivered, 0 failed, 0 pending")
        expect(section).to_contain_text("75.0% of their 4 attempts")
        expect(section.locator("dd.parked")).to_contain_text("0 parked")
        expect(section.locator(f"svg[data-chart='dest-{dest}-rate'] circle")).to_have_count(points["rate"])
        latency = section.locator(f"svg[data-chart='dest-{dest}-latency']")
        expect(latency.locator("circle[data-series=p50]")).to_have_count(points["p50"])
        expect(latency.locator("circle[data-series=p99]")).to_have_count(points["p99"])
        # The bucket with a 503 then a 200: 50 %.
        expect(section.locator(f"svg[data-chart='dest-{dest}-rate'] circle title").first).to_contain_text("%")
        rates = section.locator(f"svg[data-chart='dest-{dest}-rate'] circle title").evaluate_all(
            "ts => ts.map(t => t.textContent)"
        )
        if not any("50.0% of 2 attempts" in r for r in rates):
            problems.append(f"no bucket of 2 attempts at 50%: {rates}")
        if shots:
            section.screenshot(path=shots.replace(".png", "-destination.png"))

        # A wallet's balance: a point per entry and one for now.
        page.goto(base + "/wallet?tenant=" + cfg["tenant"])
        expect(page.locator("svg#balance-chart circle")).to_have_count(points["balance"])
        expect(page.locator("svg#balance-chart circle title").last).to_contain_text("now: 60.00 USD")
        if shots:
            page.screenshot(path=shots.replace(".png", "-wallet.png"), full_page=True)

        # Without JavaScript: the pages link to each chart, which is a page of its own.
        plain = browser.new_context(java_script_enabled=False)
        quiet = plain.new_page()
        quiet.goto(cfg["login"])
        quiet.goto(base + "/events")
        quiet.click("text=Events per minute (chart)")
        expect(quiet.locator("svg#events-chart rect[data-status]")).to_have_count(cfg["events"]["rects"])
        plain.close()
        browser.close()
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
