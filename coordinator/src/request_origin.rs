//! Whether a web request may come from where it says: the defences of a dashboard that has no
//! token (the 127.0.0.1 default) against other web sites a browser on the same machine opens.
//!
//! - A cross-site HTML form can POST without the page's consent, but only as form or plain
//!   text: writes must say `Content-Type: application/json`, which a browser sends cross-site
//!   only after a CORS preflight this server never approves.
//! - DNS rebinding points a name the attacker controls at 127.0.0.1, so the browser sends the
//!   attacker's name as `Host`: without a token only `localhost` names and IP literals are
//!   served.

use axum::http::{header, HeaderMap, Method, Uri};

/// Why a write is refused: it does not declare JSON.
pub fn write_refusal(method: &Method, headers: &HeaderMap) -> Option<String> {
    if method == Method::GET || method == Method::HEAD {
        return None;
    }
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"));
    (!json).then(|| {
        "a write to the dashboard's API must be sent as Content-Type: application/json".into()
    })
}

/// Why a request's host is refused by a coordinator without a token: it is a name other than
/// `localhost` (an IP address or a `localhost` name is what a browser sends for this machine).
pub fn host_refusal(uri: &Uri, headers: &HeaderMap) -> Option<String> {
    let host = uri.host().map(str::to_string).or_else(|| {
        headers
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
            .map(strip_port)
    })?;
    let name = host.trim_start_matches('[').trim_end_matches(']');
    let local = name.eq_ignore_ascii_case("localhost")
        || name.to_ascii_lowercase().ends_with(".localhost")
        || name.parse::<std::net::IpAddr>().is_ok();
    (!local).then(|| {
        format!(
            "host {host:?} is not an address of this coordinator: without a token it serves only \
             IP addresses and localhost (give serve a --token to be reached by name)"
        )
    })
}

/// `host:port` without the port (an IPv6 literal keeps its brackets).
fn strip_port(authority: &str) -> String {
    match authority.rsplit_once(':') {
        Some((host, port))
            if port.bytes().all(|b| b.is_ascii_digit())
                && (!host.contains(':') || host.ends_with(']')) =>
        {
            host.to_string()
        }
        _ => authority.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.clone(), value.parse().unwrap()))
            .collect()
    }

    #[test]
    fn writes_must_be_json() {
        let json = headers(&[(header::CONTENT_TYPE, "application/json; charset=utf-8")]);
        let form = headers(&[(header::CONTENT_TYPE, "application/x-www-form-urlencoded")]);
        assert_eq!(write_refusal(&Method::POST, &json), None);
        assert!(write_refusal(&Method::POST, &form).is_some());
        assert!(write_refusal(&Method::POST, &HeaderMap::new()).is_some());
        assert_eq!(write_refusal(&Method::GET, &form), None);
    }

    #[test]
    fn only_ip_addresses_and_localhost_names_are_served_without_a_token() {
        let uri: Uri = "/api/overview".parse().unwrap();
        for good in [
            "127.0.0.1:7411",
            "localhost:7411",
            "[::1]:7411",
            "10.0.0.5",
            "app.localhost",
        ] {
            assert_eq!(
                host_refusal(&uri, &headers(&[(header::HOST, good)])),
                None,
                "{good}"
            );
        }
        for bad in ["attacker.example:7411", "rebind.example"] {
            assert!(
                host_refusal(&uri, &headers(&[(header::HOST, bad)])).is_some(),
                "{bad}"
            );
        }
        let absolute: Uri = "http://attacker.example:7411/".parse().unwrap();
        assert!(host_refusal(&absolute, &HeaderMap::new()).is_some());
        assert_eq!(host_refusal(&uri, &HeaderMap::new()), None, "no host said");
    }
}
