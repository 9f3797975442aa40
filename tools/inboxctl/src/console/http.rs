//! The console's HTTP layer over hyper ([`crate::server`]): a request read once into [`Req`]
//! (method, path, query and form parameters, the session cookie), the [`Reply`] a page returns,
//! the headers every reply carries (a strict Content-Security-Policy: scripts only from the
//! console itself, no inline script, no framing), and the sessions with their CSRF tokens.

use crate::server::{self, BodyError};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The session cookie's name.
pub const COOKIE: &str = "inboxctl_console";

/// The most a form body may be (the console's forms are a few fields).
const MAX_FORM_BYTES: usize = 64 * 1024;

/// How long a form body may take to arrive (a browser sends it at once).
const FORM_TIMEOUT: Duration = Duration::from_secs(10);

/// Decoded `name=value` pairs (a query string or a form), in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params(Vec<(String, String)>);

impl Params {
    /// Parses `application/x-www-form-urlencoded` text.
    pub fn parse(text: &str) -> Self {
        Self(
            form_urlencoded::parse(text.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The first value of `name`, trimmed; `None` when absent or blank.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// The pairs, encoded again (blank values left out): a query string for links.
    pub fn encode(&self) -> String {
        let mut out = form_urlencoded::Serializer::new(String::new());
        for (k, v) in &self.0 {
            if !v.trim().is_empty() {
                out.append_pair(k, v.trim());
            }
        }
        out.finish()
    }

    /// These pairs but `name` (for a link that changes one filter).
    pub fn without(&self, name: &str) -> Self {
        Self(self.0.iter().filter(|(k, _)| k != name).cloned().collect())
    }

    /// These pairs with `name` set to `value`.
    pub fn with(&self, name: &str, value: &str) -> Self {
        let mut p = self.without(name);
        p.0.push((name.to_owned(), value.to_owned()));
        p
    }
}

/// `pairs` as a query string.
pub fn query(pairs: &[(&str, &str)]) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        out.append_pair(k, v);
    }
    out.finish()
}

/// A request as the pages see it.
#[derive(Debug, Clone)]
pub struct Req {
    pub post: bool,
    pub path: String,
    pub query: Params,
    pub form: Params,
    /// The session cookie's value, if sent.
    pub session: Option<String>,
    pub host: Option<String>,
    pub origin: Option<String>,
    /// `Sec-Fetch-Site`, which browsers send with every request (`same-origin` for the
    /// console's own forms).
    pub fetch_site: Option<String>,
}

impl Req {
    /// Reads `request` (its body only for a POST form, at most [`MAX_FORM_BYTES`], within
    /// [`FORM_TIMEOUT`]); otherwise the reply that refuses it: 405 for a method the console does
    /// not answer, 413 for a larger form, 408 for one that does not arrive in time.
    pub async fn read(request: hyper::Request<hyper::body::Incoming>) -> Result<Self, Reply> {
        let (parts, body) = request.into_parts();
        let post = match parts.method {
            http::Method::GET | http::Method::HEAD => false,
            http::Method::POST => true,
            _ => return Err(Reply::text(405, "method not allowed")),
        };
        let url = server::target(&parts);
        let (path, query) = url.split_once('?').unwrap_or((&url, ""));
        let header = |name: &str| server::header(&parts, name);
        let session = header("Cookie").and_then(|c| cookie(&c, COOKIE));
        let (host, origin) = (header("Host"), header("Origin"));
        let fetch_site = header("Sec-Fetch-Site");
        let mut form = Params::default();
        if post {
            let body = server::read_body(body, MAX_FORM_BYTES, FORM_TIMEOUT)
                .await
                .map_err(|e| refused_body(&e))?;
            form = Params::parse(&String::from_utf8_lossy(&body));
        }
        Ok(Self {
            post,
            path: path.to_owned(),
            query: Params::parse(query),
            form,
            session,
            host,
            origin,
            fetch_site,
        })
    }
}

/// The reply to a form body not read.
fn refused_body(e: &BodyError) -> Reply {
    let why = match e {
        BodyError::TooLarge { .. } => {
            format!("refused: a form is at most {} KiB", MAX_FORM_BYTES / 1024)
        }
        BodyError::TimedOut { after } => format!(
            "refused: the form did not arrive within {} s",
            after.as_secs()
        ),
        BodyError::Unreadable(_) => "refused: the form could not be read".to_owned(),
    };
    Reply::text(e.status(), &why)
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie(header: &str, name: &str) -> Option<String> {
    header
        .split(';')
        .filter_map(|part| part.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// What a page answers.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// `Location`, for a redirect.
    pub location: Option<String>,
    /// `HX-Refresh: true`: htmx reloads the whole page instead of swapping this reply in (a
    /// fragment that learns the page around it is out of date).
    pub refresh: bool,
}

impl Reply {
    pub fn html(status: u16, markup: maud::Markup) -> Self {
        Self {
            status,
            content_type: "text/html; charset=utf-8",
            body: markup.into_string().into_bytes(),
            location: None,
            refresh: false,
        }
    }

    pub fn asset(content_type: &'static str, body: &'static str) -> Self {
        Self {
            status: 200,
            content_type,
            body: body.as_bytes().to_vec(),
            location: None,
            refresh: false,
        }
    }

    /// A `303 See Other` to `to` (after a POST: the page to look at next).
    pub fn redirect(to: String) -> Self {
        Self {
            status: 303,
            content_type: "text/plain; charset=utf-8",
            body: Vec::new(),
            location: Some(to),
            refresh: false,
        }
    }

    pub fn text(status: u16, text: &str) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            body: text.as_bytes().to_vec(),
            location: None,
            refresh: false,
        }
    }

    /// The same reply, asking htmx to reload the page it was fetched for.
    pub fn refreshing(self) -> Self {
        Self {
            refresh: true,
            ..self
        }
    }

    /// The response with the headers every reply carries, and `set_cookie`.
    pub fn into_response(self, set_cookie: Option<String>) -> server::Reply {
        let mut headers = vec![
            (
                "Content-Security-Policy",
                "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                 connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
                    .to_owned(),
            ),
            ("X-Content-Type-Options", "nosniff".to_owned()),
            ("X-Frame-Options", "DENY".to_owned()),
            // Not `no-referrer`: with it a browser sends `Origin: null` on the console's own form posts.
            ("Referrer-Policy", "same-origin".to_owned()),
            ("Cache-Control", "no-store".to_owned()),
        ];
        if let Some(to) = self.location {
            headers.push(("Location", to));
        }
        if let Some(c) = set_cookie {
            headers.push(("Set-Cookie", c));
        }
        if self.refresh {
            headers.push(("HX-Refresh", "true".to_owned()));
        }
        let mut response = server::reply(self.status, self.content_type, self.body);
        for (k, v) in headers {
            // A value that is not visible ASCII is left out (none of ours is).
            if let (Ok(k), Ok(v)) = (
                http::HeaderName::from_bytes(k.as_bytes()),
                http::HeaderValue::from_str(&v),
            ) {
                response.headers_mut().append(k, v);
            }
        }
        response
    }
}

/// How long a session lasts without a request.
pub const SESSION_IDLE: Duration = Duration::from_secs(12 * 3600);

/// The most sessions kept; opening one more evicts the least recently used.
pub const MAX_SESSIONS: usize = 32;

/// One browser session.
#[derive(Debug, Clone)]
struct Open {
    csrf: String,
    last_used: Instant,
}

/// The browser sessions: session id → CSRF token, both random (v4 UUIDs, from the OS's random
/// source). A session is opened only by the console's login URL ([`Sessions::login`]: the token
/// printed when it started), expires after [`SESSION_IDLE`] unused, and the least recently used
/// is evicted past [`MAX_SESSIONS`]. Times are given by the caller (tests move them).
#[derive(Debug)]
pub struct Sessions {
    login: String,
    open: Mutex<HashMap<String, Open>>,
}

impl Sessions {
    /// Sessions opened by `login`, the secret of the console's login URL.
    pub fn new(login: String) -> Self {
        Self {
            login,
            open: Mutex::new(HashMap::new()),
        }
    }

    /// A fresh login secret (two v4 UUIDs: 244 random bits).
    pub fn secret() -> String {
        format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        )
    }

    /// The login URL's query.
    pub fn login_query(&self) -> String {
        format!("token={}", self.login)
    }

    /// The CSRF token of session `id` at `now`, if it is one of ours and not expired (its use
    /// recorded).
    pub fn token(&self, id: Option<&str>, now: Instant) -> Option<String> {
        let id = id?;
        let mut map = self.open.lock().ok()?;
        let expired = map
            .get(id)
            .is_some_and(|o| now.saturating_duration_since(o.last_used) >= SESSION_IDLE);
        if expired {
            map.remove(id);
            return None;
        }
        let open = map.get_mut(id)?;
        open.last_used = now;
        Some(open.csrf.clone())
    }

    /// A new session if `token` is the login secret: its id and CSRF token.
    pub fn login(&self, token: Option<&str>, now: Instant) -> Option<(String, String)> {
        if !same_token(token, &self.login) {
            return None;
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        let csrf = uuid::Uuid::new_v4().simple().to_string();
        let mut map = self.open.lock().ok()?;
        map.retain(|_, o| now.saturating_duration_since(o.last_used) < SESSION_IDLE);
        while map.len() >= MAX_SESSIONS {
            let oldest = map
                .iter()
                .min_by_key(|(_, o)| o.last_used)
                .map(|(id, _)| id.clone())?;
            map.remove(&oldest);
        }
        map.insert(
            id.clone(),
            Open {
                csrf: csrf.clone(),
                last_used: now,
            },
        );
        Some((id, csrf))
    }
}

/// Whether `given` is `expected` (compared in constant time for equal lengths).
pub fn same_token(given: Option<&str>, expected: &str) -> bool {
    let Some(given) = given else { return false };
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// The `Set-Cookie` value of a session: only for this origin's requests, never to script,
/// expiring with the session.
pub fn session_cookie(id: &str) -> String {
    format!(
        "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
        SESSION_IDLE.as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_decoded_trimmed_and_encoded_again() {
        let p = Params::parse("source=stripe&q=evt%201&status=&type=a+b");
        assert_eq!(p.get("source"), Some("stripe"));
        assert_eq!(p.get("q"), Some("evt 1"));
        assert_eq!(p.get("status"), None, "blank is absent");
        assert_eq!(p.get("type"), Some("a b"));
        assert_eq!(p.encode(), "source=stripe&q=evt+1&type=a+b");
        assert_eq!(p.with("q", "x").get("q"), Some("x"));
        assert_eq!(p.without("source").get("source"), None);
    }

    #[test]
    fn cookies_and_tokens() {
        assert_eq!(
            cookie("a=1; inboxctl_console=abc; b=2", COOKIE).as_deref(),
            Some("abc")
        );
        assert_eq!(cookie("a=1", COOKIE), None);
        assert!(same_token(Some("abc"), "abc"));
        assert!(!same_token(Some("abd"), "abc"));
        assert!(!same_token(Some("ab"), "abc"));
        assert!(!same_token(None, "abc"));
    }

    #[test]
    fn only_the_login_secret_opens_a_session_which_expires_and_is_evicted() {
        let t0 = Instant::now();
        let s = Sessions::new("secret".into());
        assert_eq!(s.login(None, t0), None);
        assert_eq!(s.login(Some("guess"), t0), None);
        let (id, token) = s.login(Some("secret"), t0).expect("a session");
        assert_eq!(s.token(Some(&id), t0), Some(token.clone()));
        assert_eq!(s.token(Some("forged"), t0), None);
        assert_eq!(s.token(None, t0), None);
        // Used within the idle time: kept, and the idle time counts from the last use.
        let later = t0 + SESSION_IDLE / 2;
        assert_eq!(s.token(Some(&id), later), Some(token));
        assert_eq!(s.token(Some(&id), later + SESSION_IDLE), None, "expired");
        assert_eq!(s.token(Some(&id), later), None, "and forgotten");
        // Past the cap the least recently used goes.
        let first = s.login(Some("secret"), t0).expect("a session").0;
        for k in 1..=MAX_SESSIONS {
            s.login(Some("secret"), t0 + Duration::from_secs(k as u64));
        }
        assert_eq!(s.token(Some(&first), t0 + Duration::from_secs(60)), None);
        assert!(s.open.lock().unwrap().len() <= MAX_SESSIONS);
    }
}
