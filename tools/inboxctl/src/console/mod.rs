//! `inboxctl console`: the operator console, a web page served on 127.0.0.1 by this process,
//! reading and acting with the operator's own AWS credentials and the same configuration as
//! every other command ([`Context`]): nothing is deployed, IAM decides, and what the role may not
//! do fails with AWS's reason shown on the page.
//!
//! Its routes and HTML live here, one module per page; every query and action is the CLI's own
//! (the core's store, `ops::replay`, `outbox::admin`, `outbox::resend`, the wallet `Ledger`, and
//! the commands' shared parts in [`crate::commands`]):
//! - [`events`]: the events, newest first, filtered by the query string, counts by status, and
//!   the rows polled by htmx for live updates;
//! - [`event`]: one event (history, attempts, headers masked, body on demand, repeats,
//!   deliveries, wallet entries) and its replay; [`delivery`]: its deliveries and their retry;
//!   [`resend`]: the event resent to one chosen destination; [`curl`]: a delivery as a `curl`
//!   command; [`copy`]: copy buttons;
//! - [`quarantine`]: the failed messages and their replay, one or every match (confirmed);
//! - [`destinations`]: the outbox's destinations, pause, resume and retry of failed deliveries;
//! - [`wallets`]: the wallets, one wallet's ledger and autopay, the unmatched payments and their bind;
//! - [`charts`]: small SVG charts (events per minute, a destination's success rate and
//!   latency, a wallet's balance), each over a bounded read;
//! - [`bulk`]: a confirmed bulk action in steps with progress (the quarantine's replay, the
//!   destinations' retry), acting on the snapshot of ids its confirmation named, held here.
//!
//! Safety ([`http`]): only the login URL the console prints when it starts (`/login?token=…`, a
//! secret of this run, as notebook servers do) opens a session: any other request without one is
//! refused (401), so a process, another user of the machine or a LAN client that reaches the port
//! cannot open one by asking. Sessions are cookies (`HttpOnly`, `SameSite=Strict`, expiring) that
//! expire after 12 h unused and are evicted past 32. Every state-changing action is a POST
//! carrying the session's CSRF token, from the console's own origin (`Origin`, or for a browser
//! that sends none `Sec-Fetch-Site: same-origin`: a POST with neither is refused); a request
//! whose `Host` is not this console's address is refused (DNS rebinding); every
//! reply carries a Content-Security-Policy allowing only the console's own script; maud escapes
//! every value; signature header values and destination secrets are never rendered ([`mask`]).

mod against;
mod bulk;
mod charts;
mod copy;
mod curl;
mod cursor;
mod delivery;
mod destinations;
mod dismiss;
mod event;
mod events;
mod http;
mod layout;
mod mask;
mod quarantine;
mod resend;
mod wallets;

use crate::cli::ConsoleArgs;
use crate::context::Context;
use crate::error::{failed, Error, Result};
use crate::output::say;
use http::{Reply, Req, Sessions};
use inbox_core::domain::MessageKey;
use inbox_core::outbox::delivery::DeliveryRef;
use inbox_core::store::dynamo::DynamoTable;
use layout::Frame;
use maud::html;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

/// What every page reads and acts with.
pub struct Console<'a> {
    ctx: &'a Context,
    store: DynamoTable,
    operator: String,
    table: String,
    /// The bulk replays' snapshots: the failed messages each confirmation named.
    replays: bulk::Snapshots<MessageKey>,
    /// The bulk retries' snapshots: the failed deliveries each confirmation named.
    retries: bulk::Snapshots<DeliveryRef>,
}

/// A request's session: its CSRF token (the pages put it in their forms).
pub struct Session {
    pub csrf: String,
}

impl Console<'_> {
    fn frame(&self) -> Frame<'_> {
        Frame {
            table: &self.table,
            operator: &self.operator,
        }
    }
}

/// The address to listen on: 127.0.0.1 unless `--listen` names another one.
pub fn listen_address(listen: Option<IpAddr>) -> IpAddr {
    listen.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

/// The `Host` header values this console answers (the defence against DNS rebinding: a page of
/// another site reaches it only under that site's name, never one of these).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHosts {
    port: u16,
    /// Exact `host:port` values.
    exact: Vec<String>,
    /// Listening on every interface (`0.0.0.0`, `::`): any IP address literal with the port
    /// (whichever of the machine's addresses the operator used; a name is never an IP literal).
    any_ip: bool,
}

impl AllowedHosts {
    /// Whether a request with this `Host` is this console's.
    pub fn allows(&self, host: &str) -> bool {
        self.exact.iter().any(|h| h == host)
            || (self.any_ip
                && host
                    .parse::<SocketAddr>()
                    .is_ok_and(|a| a.port() == self.port))
    }

    /// The values, as the refusal names them.
    pub fn describe(&self) -> String {
        let mut named = self.exact.join(", ");
        if self.any_ip {
            named.push_str(&format!(
                ", or any of this machine's IP addresses with :{}",
                self.port
            ));
        }
        named
    }
}

/// The hosts of a console listening on `addr`: its own address, and `localhost` when it listens
/// on loopback; on every interface (`0.0.0.0`, `::`), `localhost` and any IP address literal.
pub fn allowed_hosts(addr: SocketAddr) -> AllowedHosts {
    let port = addr.port();
    let any_ip = addr.ip().is_unspecified();
    let mut exact = Vec::new();
    if !any_ip {
        exact.push(addr.to_string());
    }
    if any_ip || addr.ip().is_loopback() {
        exact.push(format!("localhost:{port}"));
    }
    AllowedHosts {
        port,
        exact,
        any_ip,
    }
}

/// What every connection's task answers with.
struct Served {
    console: Console<'static>,
    hosts: AllowedHosts,
    sessions: Sessions,
}

/// Serves the console until the listener fails; every connection is its own task
/// ([`crate::server`]), so a slow page, a slow form or a slow client never holds up another.
pub async fn run(ctx: Context, args: ConsoleArgs) -> Result<()> {
    let ip = listen_address(args.listen);
    // The console serves until the process ends: its tasks share the context for that long.
    let ctx: &'static Context = Box::leak(Box::new(ctx));
    let store = ctx.store().await?;
    let listener = tokio::net::TcpListener::bind((ip, args.port))
        .await
        .map_err(|e| failed(format!("cannot listen on {ip}:{}: {e}", args.port)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| failed(format!("the console's listener has no address: {e}")))?;
    if !ip.is_loopback() {
        eprintln!(
            "warning: listening on {ip}, not loopback, over plain HTTP (no TLS): the login URL \
             printed below and the session cookie cross that network unencrypted, and whoever \
             holds either acts with your AWS credentials (replay, retry, pause, bind payments). \
             Prefer an SSH tunnel to 127.0.0.1."
        );
    }
    let served = Arc::new(Served {
        console: Console {
            ctx,
            table: store.table().to_owned(),
            store,
            operator: args.operator.clone(),
            replays: bulk::Snapshots::default(),
            retries: bulk::Snapshots::default(),
        },
        hosts: allowed_hosts(addr),
        sessions: Sessions::new(Sessions::secret()),
    });
    say(format!(
        "console: http://{addr}/login?{}",
        served.sessions.login_query()
    ))?;
    // Never told to stop: the sender is gone.
    let (_, never) = tokio::sync::watch::channel(false);
    crate::server::serve(
        listener,
        move |request| {
            let served = served.clone();
            async move {
                match Req::read(request).await {
                    Ok(req) => {
                        let (reply, cookie) = served
                            .console
                            .answer(&req, &served.hosts, &served.sessions)
                            .await;
                        reply.into_response(cookie)
                    }
                    Err(refused) => refused.into_response(None),
                }
            }
        },
        never,
    )
    .await;
    Err(failed("the console's listener stopped"))
}

impl Console<'_> {
    /// Checks the request's host, session and (for a POST) origin and CSRF token, then routes it.
    /// Returns the reply and, for a new session, its cookie.
    async fn answer(
        &self,
        req: &Req,
        hosts: &AllowedHosts,
        sessions: &Sessions,
    ) -> (Reply, Option<String>) {
        if !req.host.as_deref().is_some_and(|h| hosts.allows(h)) {
            return (
                Reply::text(
                    421,
                    &format!(
                        "refused: this console answers only requests to its own address ({})",
                        hosts.describe()
                    ),
                ),
                None,
            );
        }
        // The page's own assets carry nothing of the table: served without a session.
        if req.path.starts_with("/static/") {
            return (static_asset(&req.path), None);
        }
        if req.path == "/favicon.ico" {
            return (Reply::text(204, ""), None);
        }
        let now = std::time::Instant::now();
        if !req.post && req.path == "/login" {
            return match sessions.login(req.query.get("token"), now) {
                Some((id, _)) => (Reply::redirect("/".into()), Some(http::session_cookie(&id))),
                None => (
                    Reply::text(
                        403,
                        "refused: this login URL's token is not this console's (use the URL it printed when it started)",
                    ),
                    None,
                ),
            };
        }
        let Some(csrf) = sessions.token(req.session.as_deref(), now) else {
            return (
                Reply::text(
                    401,
                    "this console opens only from the login URL it printed when it started \
                     (console: http://…/login?token=…); open that URL",
                ),
                None,
            );
        };
        if req.post {
            let own = |o: &String| o.strip_prefix("http://").is_some_and(|h| hosts.allows(h));
            let origin_ok = match &req.origin {
                Some(o) => own(o),
                None => req.fetch_site.as_deref() == Some("same-origin"),
            };
            if !origin_ok || !http::same_token(req.form.get("csrf"), &csrf) {
                return (
                    Reply::text(
                        403,
                        "refused: this form's CSRF token is missing or stale, or it was not sent from this console's page (reload the page and try again)",
                    ),
                    None,
                );
            }
        }
        let (session, cookie) = (Session { csrf }, None);
        let reply = match self.route(req, &session).await {
            Ok(r) => r,
            Err(e) => self.error_page(&e),
        };
        (reply, cookie)
    }

    async fn route(&self, req: &Req, session: &Session) -> Result<Reply> {
        match (req.post, req.path.as_str()) {
            (false, "/") => Ok(Reply::redirect("/events".into())),
            (false, "/events") => events::page(self, &req.query).await,
            (false, "/events/rows") => events::rows(self, &req.query).await,
            (false, "/events/chart") => charts::events(self, &req.query).await,
            (false, "/event") => event::page(self, session, &req.query).await,
            (false, "/event/body") => event::body(self, &req.query).await,
            (false, "/event/status") => event::status(self, &req.query).await,
            (true, "/event/replay") => event::replay(self, &req.form).await,
            (true, "/event/resend") => resend::resend(self, &req.form).await,
            (true, "/delivery/retry") => delivery::retry(self, &req.form).await,
            (false, "/delivery/curl") => curl::page(self, &req.query).await,
            (false, "/quarantine") => quarantine::page(self, session, &req.query).await,
            (true, "/quarantine/replay") => quarantine::replay_all(self, session, &req.form).await,
            (false, "/destinations") => destinations::page(self, session, &req.query).await,
            (true, "/destination/pause") => destinations::pause(self, &req.form).await,
            (true, "/destination/resume") => destinations::resume(self, &req.form).await,
            (true, "/destination/retry") => destinations::retry(self, session, &req.form).await,
            (false, "/destination/chart") => charts::destination(self, &req.query).await,
            (false, "/wallets") => wallets::list(self, session).await,
            (false, "/wallets/stripe") => against::page(self).await,
            (true, "/wallet/bind") => wallets::bind(self, session, &req.form).await,
            (true, "/wallet/dismiss") => dismiss::dismiss(self, session, &req.form).await,
            (false, "/wallet") => wallets::one(self, &req.query).await,
            _ => Ok(Reply::html(
                404,
                layout::page(
                    &self.frame(),
                    "",
                    "Not found",
                    html! { h1 { "Not found" } p { "No page at " code { (req.path) } "." } },
                ),
            )),
        }
    }

    /// A failed read or action: what failed and why, AWS's reason included.
    fn error_page(&self, e: &Error) -> Reply {
        let status = match e {
            Error::Usage(_) => 400,
            Error::Failed(_) => 502,
        };
        Reply::html(
            status,
            layout::page(
                &self.frame(),
                "",
                "Failed",
                html! {
                    h1 { "That did not work" }
                    (layout::error_box(&e.to_string()))
                    p { a href="/events" { "Back to the events" } }
                },
            ),
        )
    }
}

fn static_asset(path: &str) -> Reply {
    match path {
        "/static/htmx.min.js" => Reply::asset("text/javascript; charset=utf-8", layout::HTMX),
        "/static/console.css" => Reply::asset("text/css; charset=utf-8", layout::CSS),
        "/static/console.js" => Reply::asset("text/javascript; charset=utf-8", layout::JS),
        _ => Reply::text(404, "not found"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_unless_told_otherwise() {
        assert_eq!(listen_address(None), IpAddr::V4(Ipv4Addr::LOCALHOST));
        let any: IpAddr = "0.0.0.0".parse().unwrap();
        assert_eq!(listen_address(Some(any)), any);
    }

    fn allowed(listen: &str) -> Vec<&'static str> {
        let hosts = allowed_hosts(listen.parse().unwrap());
        [
            "127.0.0.1:8642",
            "localhost:8642",
            "10.0.0.5:8642",
            "[::1]:8642",
            "0.0.0.0:8642",
            "127.0.0.1:9999",
            "localhost:9999",
            "evil.example:8642",
            "127.0.0.1.nip.io:8642",
            "127.0.0.1",
        ]
        .into_iter()
        .filter(|h| hosts.allows(h))
        .collect()
    }

    #[test]
    fn each_listen_address_answers_its_own_hosts_and_never_a_name() {
        assert_eq!(
            allowed("127.0.0.1:8642"),
            vec!["127.0.0.1:8642", "localhost:8642"]
        );
        assert_eq!(allowed("10.0.0.5:8642"), vec!["10.0.0.5:8642"]);
        // Every interface: whichever address the operator used, and localhost (issue: only
        // `Host: 0.0.0.0:PORT` was answered).
        assert_eq!(
            allowed("0.0.0.0:8642"),
            vec![
                "127.0.0.1:8642",
                "localhost:8642",
                "10.0.0.5:8642",
                "[::1]:8642",
                "0.0.0.0:8642"
            ]
        );
        assert_eq!(allowed("[::]:8642"), allowed("0.0.0.0:8642"));
        assert!(allowed_hosts("0.0.0.0:8642".parse().unwrap())
            .describe()
            .contains("localhost:8642"));
    }
}
