//! The bad-input rows of the provider schemes (SNS, SendGrid, Mailgun, Postmark, Resend/Svix,
//! Standard Webhooks `v1a`, Paddle, Square, Twilio, Discord, Zoom): every class the first schemes have
//! — missing, malformed, wrong, stale, future, tampered, duplicated (a header sent twice arrives
//! joined with a comma, as API Gateway does; a member of a signed body given twice) — where the
//! scheme has it (Square, Twilio and Postmark sign no timestamp; Postmark signs no body).

use super::{h, other_secret, replace, value, without, Case};
use integration_tests::Harness;
use serde_json::{json, Value};

/// A case for `source` with these headers and body.
fn case(
    name: &'static str,
    source: &'static str,
    headers: Vec<(String, String)>,
    body: &str,
    status: i64,
    code: &'static str,
) -> Case {
    Case {
        name,
        method: "POST",
        source,
        headers,
        body: Some(body.to_owned()),
        base64: false,
        status,
        code,
    }
}

/// The headers sent twice (API Gateway joins them with a comma).
fn twice(headers: &[(String, String)], name: &str) -> Vec<(String, String)> {
    let mut out = headers.to_vec();
    out.push((name.to_owned(), value(headers, name).to_owned()));
    out
}

/// A JSON body with one member changed.
fn with_member(body: &str, path: &[&str], new: Value) -> String {
    let mut v: Value = serde_json::from_str(body).unwrap();
    let mut node = &mut v;
    for key in &path[..path.len() - 1] {
        node = &mut node[*key];
    }
    node[path[path.len() - 1]] = new;
    v.to_string()
}

fn without_member(body: &str, path: &[&str]) -> String {
    let mut v: Value = serde_json::from_str(body).unwrap();
    let mut node = &mut v;
    for key in &path[..path.len() - 1] {
        node = &mut node[*key];
    }
    node.as_object_mut().unwrap().remove(path[path.len() - 1]);
    v.to_string()
}

pub(super) fn cases(hs: &Harness, now: i64) -> Vec<Case> {
    let mut cases = Vec::new();
    let stale = now - 600;
    let future = now + 600;

    // ------------------------------------------------------------ SES through SNS
    let ses_event = json!({"eventType": "Delivery", "mail": {"messageId": "m-bad", "tags": {"tenant": ["acme"]}}}).to_string();
    let sns = |ts| {
        hs.sign_message("ses", ses_event.as_bytes(), "bad-sns-1", ts)
            .1
    };
    let good = sns(now);
    let sig = serde_json::from_str::<Value>(&good).unwrap()["Signature"]
        .as_str()
        .unwrap()
        .to_owned();
    let other_sig =
        serde_json::from_str::<Value>(&hs.sign_message("ses", b"{}", "bad-sns-2", now).1).unwrap()
            ["Signature"]
            .as_str()
            .unwrap()
            .to_owned();
    let ses = |name, body: String, code| {
        case(
            name,
            "ses",
            h(&[("content-type", "text/plain; charset=UTF-8")]),
            &body,
            401,
            code,
        )
    };
    cases.extend([
        ses(
            "ses: no Signature",
            without_member(&good, &["Signature"]),
            "signature_missing",
        ),
        ses(
            "ses: no SigningCertURL",
            without_member(&good, &["SigningCertURL"]),
            "signature_missing",
        ),
        ses(
            "ses: Signature not base64",
            with_member(&good, &["Signature"], json!("not base64!")),
            "signature_malformed",
        ),
        ses(
            "ses: SignatureVersion 3",
            with_member(&good, &["SignatureVersion"], json!("3")),
            "signature_malformed",
        ),
        ses(
            "ses: another message's signature",
            with_member(&good, &["Signature"], json!(other_sig)),
            "signature_invalid",
        ),
        ses(
            "ses: SHA1 claimed for a SHA256 signature",
            with_member(&good, &["SignatureVersion"], json!("1")),
            "signature_invalid",
        ),
        ses("ses: stale", sns(stale), "timestamp_out_of_tolerance"),
        ses("ses: future", sns(future), "timestamp_out_of_tolerance"),
        ses(
            "ses: tampered Message",
            with_member(
                &good,
                &["Message"],
                json!(ses_event.replace("Delivery", "Bounce")),
            ),
            "signature_invalid",
        ),
        ses(
            "ses: duplicated Message",
            good.replacen(r#""Message":"#, r#""Message":"{}","Message":"#, 1),
            "signature_malformed",
        ),
        ses(
            "ses: duplicated Signature",
            good.replacen(
                &format!(r#""Signature":"{sig}""#),
                &format!(r#""Signature":"{other_sig}","Signature":"{sig}""#),
                1,
            ),
            "signature_malformed",
        ),
        ses(
            "ses: another topic",
            with_member(
                &good,
                &["TopicArn"],
                json!("arn:aws:sns:us-east-1:123456789012:other"),
            ),
            "signature_malformed",
        ),
        ses(
            "ses: certificate on another host",
            with_member(
                &good,
                &["SigningCertURL"],
                json!("https://certs.example.com/SimpleNotificationService-x.pem"),
            ),
            "signature_malformed",
        ),
        ses(
            "ses: certificate over HTTP",
            with_member(
                &good,
                &["SigningCertURL"],
                json!("http://sns.us-east-1.amazonaws.com/SimpleNotificationService-x.pem"),
            ),
            "signature_malformed",
        ),
        ses(
            "ses: not JSON",
            "Message=hello".to_owned(),
            "signature_malformed",
        ),
    ]);

    // ------------------------------------------------------------ SendGrid
    let sg_body = r#"[{"event":"delivered","email":"customer@example.com","sg_event_id":"bad-1"}]"#;
    let sg = |ts| hs.sign_at("sendgrid", sg_body.as_bytes(), "", ts);
    let ok = sg(now);
    const SG_SIG: &str = "X-Twilio-Email-Event-Webhook-Signature";
    const SG_TS: &str = "X-Twilio-Email-Event-Webhook-Timestamp";
    // A genuine signature by another key: SendGrid's own libraries' test vector.
    let foreign = "MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH2j/0=";
    let sendgrid =
        |name, headers, body: &str, code| case(name, "sendgrid", headers, body, 401, code);
    cases.extend([
        sendgrid(
            "sendgrid: no signature",
            without(&ok, SG_SIG),
            sg_body,
            "signature_missing",
        ),
        sendgrid(
            "sendgrid: no timestamp",
            without(&ok, SG_TS),
            sg_body,
            "signature_missing",
        ),
        sendgrid(
            "sendgrid: signature not base64",
            replace(&ok, SG_SIG, "%%%"),
            sg_body,
            "signature_malformed",
        ),
        sendgrid(
            "sendgrid: timestamp not a number",
            replace(&ok, SG_TS, "soon"),
            sg_body,
            "signature_malformed",
        ),
        sendgrid(
            "sendgrid: another key",
            replace(&ok, SG_SIG, foreign),
            sg_body,
            "signature_invalid",
        ),
        sendgrid(
            "sendgrid: stale",
            sg(stale),
            sg_body,
            "timestamp_out_of_tolerance",
        ),
        sendgrid(
            "sendgrid: future",
            sg(future),
            sg_body,
            "timestamp_out_of_tolerance",
        ),
        sendgrid(
            "sendgrid: tampered batch",
            ok.clone(),
            &sg_body.replace("delivered", "bounce"),
            "signature_invalid",
        ),
        sendgrid(
            "sendgrid: signature sent twice",
            twice(&ok, SG_SIG),
            sg_body,
            "signature_malformed",
        ),
        sendgrid(
            "sendgrid: timestamp sent twice",
            twice(&ok, SG_TS),
            sg_body,
            "signature_malformed",
        ),
    ]);

    // ------------------------------------------------------------ Mailgun
    let mg_event = r#"{"event-data":{"event":"delivered","id":"bad-mg"}}"#;
    let token = "0123456789abcdef0123456789abcdef0123456789abcdef01";
    let mg = |ts| hs.sign_message("mailgun", mg_event.as_bytes(), token, ts).1;
    let good = mg(now);
    // Mailgun's default tolerance is its 9-hour retry window (docs/sources.md).
    let (mg_stale, mg_future) = (now - 9 * 3600 - 600, now + 9 * 3600 + 600);
    let mailgun = |name, body: String, code| case(name, "mailgun", h(&[]), &body, 401, code);
    let wrong_key = {
        let signed = other_secret(
            "mailgun",
            json!({}),
            "not-the-signing-key",
            mg_event.as_bytes(),
            now,
            token,
        );
        assert!(signed.is_empty(), "Mailgun signs in the body");
        let mut v: Value = serde_json::from_str(&good).unwrap();
        v["signature"]["signature"] = json!("00".repeat(32));
        v.to_string()
    };
    cases.extend([
        mailgun(
            "mailgun: no signature object",
            without_member(&good, &["signature"]),
            "signature_missing",
        ),
        mailgun(
            "mailgun: no token",
            without_member(&good, &["signature", "token"]),
            "signature_missing",
        ),
        mailgun(
            "mailgun: signature not hex",
            with_member(&good, &["signature", "signature"], json!("zz")),
            "signature_malformed",
        ),
        mailgun(
            "mailgun: token with a space",
            with_member(&good, &["signature", "token"], json!("a b")),
            "signature_malformed",
        ),
        mailgun("mailgun: wrong signature", wrong_key, "signature_invalid"),
        mailgun("mailgun: stale", mg(mg_stale), "timestamp_out_of_tolerance"),
        mailgun(
            "mailgun: future",
            mg(mg_future),
            "timestamp_out_of_tolerance",
        ),
        mailgun(
            "mailgun: tampered timestamp",
            with_member(
                &good,
                &["signature", "timestamp"],
                json!((now - 1).to_string()),
            ),
            "signature_invalid",
        ),
        mailgun(
            "mailgun: duplicated token",
            good.replacen(r#""token":"#, r#""token":"x","token":"#, 1),
            "signature_malformed",
        ),
        mailgun(
            "mailgun: not JSON",
            "token=x".to_owned(),
            "signature_malformed",
        ),
    ]);

    // ------------------------------------------------------------ Postmark
    let pm_body =
        r#"{"RecordType":"Delivery","MessageID":"bad-pm","Recipient":"customer@example.com"}"#;
    let pm = hs.sign_at("postmark", pm_body.as_bytes(), "", now);
    let basic = |creds: &str| {
        use base64::Engine as _;
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(creds)
        )
    };
    let postmark = |name, source, headers, code| case(name, source, headers, pm_body, 401, code);
    cases.extend([
        postmark(
            "postmark: no credentials",
            "postmark",
            h(&[]),
            "signature_missing",
        ),
        postmark(
            "postmark: bearer token",
            "postmark",
            h(&[("authorization", "Bearer abc")]),
            "signature_malformed",
        ),
        postmark(
            "postmark: credentials not base64",
            "postmark",
            h(&[("authorization", "Basic %%%")]),
            "signature_malformed",
        ),
        postmark(
            "postmark: wrong password",
            "postmark",
            h(&[("authorization", &basic("postmark:wrong"))]),
            "signature_invalid",
        ),
        postmark(
            "postmark: credentials sent twice",
            "postmark",
            twice(&pm, "authorization"),
            "signature_malformed",
        ),
        postmark(
            "postmark: address not allowed",
            "postmark-allowlist",
            pm.clone(),
            "source_not_allowed",
        ),
    ]);

    // ------------------------------------------------------------ Resend (Svix headers), v1a
    let rs_body = r#"{"type":"email.delivered","created_at":"2026-11-30T10:00:00Z","data":{"email_id":"bad-rs"}}"#;
    let rs = |ts| hs.sign_at("resend", rs_body.as_bytes(), "msg_bad_resend", ts);
    let ok = rs(now);
    let resend = |name, headers, body: &str, code| case(name, "resend", headers, body, 401, code);
    cases.extend([
        resend(
            "resend: no svix-signature",
            without(&ok, "svix-signature"),
            rs_body,
            "signature_missing",
        ),
        resend(
            "resend: webhook-* headers instead",
            {
                ok.iter()
                    .map(|(k, v)| (k.replace("svix-", "webhook-"), v.clone()))
                    .collect()
            },
            rs_body,
            "signature_missing",
        ),
        resend(
            "resend: signature not base64",
            replace(&ok, "svix-signature", "v1,%%%"),
            rs_body,
            "signature_malformed",
        ),
        resend(
            "resend: wrong secret",
            other_secret(
                "standard-webhooks",
                json!({"header_prefix": "svix-"}),
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                rs_body.as_bytes(),
                now,
                "msg_bad_resend",
            ),
            rs_body,
            "signature_invalid",
        ),
        resend(
            "resend: stale",
            rs(stale),
            rs_body,
            "timestamp_out_of_tolerance",
        ),
        resend(
            "resend: future",
            rs(future),
            rs_body,
            "timestamp_out_of_tolerance",
        ),
        resend(
            "resend: tampered",
            ok.clone(),
            &rs_body.replace("delivered", "bounced"),
            "signature_invalid",
        ),
        resend(
            "resend: id sent twice",
            twice(&ok, "svix-id"),
            rs_body,
            "signature_invalid",
        ),
        resend(
            "resend: timestamp sent twice",
            twice(&ok, "svix-timestamp"),
            rs_body,
            "signature_malformed",
        ),
    ]);
    let v1a = hs.sign_at("webhooks-v1a", rs_body.as_bytes(), "msg_bad_v1a", now);
    let v1a_case =
        |name, headers, body: &str, code| case(name, "webhooks-v1a", headers, body, 401, code);
    cases.extend([
        v1a_case(
            "v1a: only a v1 signature",
            replace(&v1a, "webhook-signature", value(&ok, "svix-signature")),
            rs_body,
            "signature_malformed",
        ),
        v1a_case(
            "v1a: truncated",
            replace(
                &v1a,
                "webhook-signature",
                &value(&v1a, "webhook-signature")[..40],
            ),
            rs_body,
            "signature_malformed",
        ),
        v1a_case(
            "v1a: another key",
            other_secret(
                "standard-webhooks",
                json!({}),
                "whsk_nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A=",
                rs_body.as_bytes(),
                now,
                "msg_bad_v1a",
            ),
            rs_body,
            "signature_invalid",
        ),
        v1a_case(
            "v1a: tampered",
            v1a.clone(),
            &rs_body.replace("delivered", "bounced"),
            "signature_invalid",
        ),
        v1a_case(
            "v1a: stale",
            hs.sign_at("webhooks-v1a", rs_body.as_bytes(), "msg_bad_v1a", stale),
            rs_body,
            "timestamp_out_of_tolerance",
        ),
    ]);

    // ------------------------------------------------------------ Paddle
    let pd_body =
        r#"{"event_id":"evt_01hvbadpaddle","event_type":"transaction.completed","data":{}}"#;
    let pd = |ts| hs.sign_at("paddle", pd_body.as_bytes(), "", ts);
    let ok = pd(now);
    let h1 = value(&ok, "paddle-signature")
        .split("h1=")
        .nth(1)
        .unwrap()
        .to_owned();
    let paddle = |name, headers, body: &str, code| case(name, "paddle", headers, body, 401, code);
    cases.extend([
        paddle("paddle: no signature", h(&[]), pd_body, "signature_missing"),
        paddle(
            "paddle: no ts",
            replace(&ok, "paddle-signature", &format!("h1={h1}")),
            pd_body,
            "signature_malformed",
        ),
        paddle(
            "paddle: short h1",
            replace(
                &ok,
                "paddle-signature",
                &format!("ts={now};h1={}", &h1[..62]),
            ),
            pd_body,
            "signature_malformed",
        ),
        paddle(
            "paddle: wrong secret",
            other_secret(
                "paddle",
                json!({}),
                "pdl_ntfset_wrong",
                pd_body.as_bytes(),
                now,
                "",
            ),
            pd_body,
            "signature_invalid",
        ),
        paddle(
            "paddle: stale",
            pd(stale),
            pd_body,
            "timestamp_out_of_tolerance",
        ),
        paddle(
            "paddle: future",
            pd(future),
            pd_body,
            "timestamp_out_of_tolerance",
        ),
        paddle(
            "paddle: tampered",
            ok.clone(),
            &pd_body.replace("completed", "canceled"),
            "signature_invalid",
        ),
        paddle(
            "paddle: timestamp swapped",
            replace(&ok, "paddle-signature", &format!("ts={};h1={h1}", now - 1)),
            pd_body,
            "signature_invalid",
        ),
        paddle(
            "paddle: header sent twice",
            twice(&ok, "paddle-signature"),
            pd_body,
            "signature_malformed",
        ),
    ]);

    // ------------------------------------------------------------ Square
    let sq_body =
        r#"{"event_id":"5b8c3d8e-0000-4a1b-9c2d-bad000000001","type":"payment.updated","data":{}}"#;
    let ok = hs.sign_at("square", sq_body.as_bytes(), "", now);
    const SQ: &str = "x-square-hmacsha256-signature";
    let square = |name, headers, body: &str, code| case(name, "square", headers, body, 401, code);
    cases.extend([
        square("square: no signature", h(&[]), sq_body, "signature_missing"),
        square(
            "square: not base64",
            replace(&ok, SQ, "%%%"),
            sq_body,
            "signature_malformed",
        ),
        square(
            "square: truncated",
            replace(&ok, SQ, &value(&ok, SQ)[..20]),
            sq_body,
            "signature_malformed",
        ),
        square(
            "square: wrong key",
            other_secret(
                "square",
                json!({"url": "http://127.0.0.1:9000/lambda-url/ingest/webhooks/square"}),
                "wrong",
                sq_body.as_bytes(),
                now,
                "",
            ),
            sq_body,
            "signature_invalid",
        ),
        square(
            "square: signed for another URL",
            other_secret(
                "square",
                json!({"url": "https://abc.execute-api.us-east-1.amazonaws.com/webhooks/square"}),
                "local-square-signature-key",
                sq_body.as_bytes(),
                now,
                "",
            ),
            sq_body,
            "signature_invalid",
        ),
        square(
            "square: tampered",
            ok.clone(),
            &sq_body.replace("updated", "created"),
            "signature_invalid",
        ),
        square(
            "square: sent twice",
            twice(&ok, SQ),
            sq_body,
            "signature_malformed",
        ),
    ]);

    // ------------------------------------------------------------ Twilio
    let tw_body = "MessageSid=SMbad0001&MessageStatus=delivered&To=%2B15558675310";
    let ok = hs.sign_at("twilio", tw_body.as_bytes(), "", now);
    let twilio = |name, headers: Vec<(String, String)>, body: &str, code| {
        let mut headers = headers;
        headers.push((
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        ));
        case(name, "twilio", headers, body, 401, code)
    };
    cases.extend([
        twilio("twilio: no signature", h(&[]), tw_body, "signature_missing"),
        twilio(
            "twilio: not base64",
            replace(&ok, "x-twilio-signature", "%%%"),
            tw_body,
            "signature_malformed",
        ),
        twilio(
            "twilio: wrong token",
            other_secret(
                "twilio",
                json!({"url": "http://127.0.0.1:9000/lambda-url/ingest/webhooks/twilio"}),
                "wrong",
                tw_body.as_bytes(),
                now,
                "",
            ),
            tw_body,
            "signature_invalid",
        ),
        twilio(
            "twilio: tampered parameter",
            ok.clone(),
            &tw_body.replace("delivered", "failed"),
            "signature_invalid",
        ),
        twilio(
            "twilio: added parameter",
            ok.clone(),
            &format!("{tw_body}&Extra=1"),
            "signature_invalid",
        ),
        twilio(
            "twilio: sent twice",
            twice(&ok, "x-twilio-signature"),
            tw_body,
            "signature_malformed",
        ),
        twilio(
            "twilio: unknown algorithm",
            {
                let mut v = ok.clone();
                v.push((
                    "x-twilio-webhooks-signature-settings".into(),
                    "key=k,algorithm=HMAC_MD5".into(),
                ));
                v
            },
            tw_body,
            "signature_malformed",
        ),
    ]);

    // ------------------------------------------------------------ Discord
    let dc_body = r#"{"version":1,"application_id":"1234567890","type":1,"event":{"type":"APPLICATION_AUTHORIZED"}}"#;
    let dc = |ts| hs.sign_at("discord", dc_body.as_bytes(), "", ts);
    let ok = dc(now);
    const DS: &str = "x-signature-ed25519";
    const DT: &str = "x-signature-timestamp";
    // RFC 8032's test key 1 (seed ‖ public key): a valid key, not the configured one.
    let rfc_key = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    let discord = |name, headers, body: &str, code| case(name, "discord", headers, body, 401, code);
    cases.extend([
        discord(
            "discord: no signature",
            without(&ok, DS),
            dc_body,
            "signature_missing",
        ),
        discord(
            "discord: no timestamp",
            without(&ok, DT),
            dc_body,
            "signature_missing",
        ),
        discord(
            "discord: signature not hex",
            replace(&ok, DS, &"zz".repeat(64)),
            dc_body,
            "signature_malformed",
        ),
        discord(
            "discord: short signature",
            replace(&ok, DS, &value(&ok, DS)[..64]),
            dc_body,
            "signature_malformed",
        ),
        discord(
            "discord: another key",
            other_secret("discord", json!({}), rfc_key, dc_body.as_bytes(), now, ""),
            dc_body,
            "signature_invalid",
        ),
        discord(
            "discord: stale",
            dc(stale),
            dc_body,
            "timestamp_out_of_tolerance",
        ),
        discord(
            "discord: future",
            dc(future),
            dc_body,
            "timestamp_out_of_tolerance",
        ),
        discord(
            "discord: tampered",
            ok.clone(),
            &dc_body.replace("AUTHORIZED", "DEAUTHORIZED"),
            "signature_invalid",
        ),
        discord(
            "discord: timestamp swapped",
            replace(&ok, DT, &(now - 1).to_string()),
            dc_body,
            "signature_invalid",
        ),
        discord(
            "discord: signature sent twice",
            twice(&ok, DS),
            dc_body,
            "signature_malformed",
        ),
    ]);

    // ------------------------------------------------------------ Zoom
    let zm_body =
        r#"{"event":"meeting.started","event_ts":1700000000000,"payload":{"object":{"id":"1"}}}"#;
    let zm = |ts| hs.sign_at("zoom", zm_body.as_bytes(), "", ts);
    let ok = zm(now);
    const ZS: &str = "x-zm-signature";
    const ZT: &str = "x-zm-request-timestamp";
    let zoom = |name, headers, body: &str, code| case(name, "zoom", headers, body, 401, code);
    cases.extend([
        zoom(
            "zoom: no signature",
            without(&ok, ZS),
            zm_body,
            "signature_missing",
        ),
        zoom(
            "zoom: no timestamp",
            without(&ok, ZT),
            zm_body,
            "signature_missing",
        ),
        zoom(
            "zoom: no v0= prefix",
            replace(&ok, ZS, &value(&ok, ZS)[3..]),
            zm_body,
            "signature_malformed",
        ),
        zoom(
            "zoom: signature not hex",
            replace(&ok, ZS, &format!("v0={}", "zz".repeat(32))),
            zm_body,
            "signature_malformed",
        ),
        zoom(
            "zoom: timestamp not a number",
            replace(&ok, ZT, "soon"),
            zm_body,
            "signature_malformed",
        ),
        zoom(
            "zoom: another secret",
            other_secret(
                "zoom",
                json!({}),
                "another-secret-token",
                zm_body.as_bytes(),
                now,
                "",
            ),
            zm_body,
            "signature_invalid",
        ),
        zoom(
            "zoom: stale",
            zm(stale),
            zm_body,
            "timestamp_out_of_tolerance",
        ),
        zoom(
            "zoom: future",
            zm(future),
            zm_body,
            "timestamp_out_of_tolerance",
        ),
        zoom(
            "zoom: tampered",
            ok.clone(),
            &zm_body.replace("started", "ended"),
            "signature_invalid",
        ),
        zoom(
            "zoom: signature sent twice",
            twice(&ok, ZS),
            zm_body,
            "signature_malformed",
        ),
        zoom(
            "zoom: timestamp sent twice",
            twice(&ok, ZT),
            zm_body,
            "signature_malformed",
        ),
    ]);
    cases
}
