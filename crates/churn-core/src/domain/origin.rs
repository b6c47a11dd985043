//! Allowed origins of the cancel-flow widget: `http(s)://host[:port]`, nothing more.

use url::Url;

pub const MAX_ALLOWED_ORIGINS: usize = 50;

/// Parses one origin and returns its normalised form (lower-case host, default port dropped).
pub fn normalize(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    if raw == "*" {
        return Err("wildcard origins are not allowed".into());
    }
    if !shaped_like_an_origin(raw) {
        return Err(format!(
            "{raw:?} is not an origin: http(s)://host[:port], the host of letters, digits, \
             hyphens and dots"
        ));
    }
    let url = Url::parse(raw).map_err(|_| format!("{raw:?} is not an origin"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("origin must use http or https".into());
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("origin must have a host".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("origin must not contain credentials".into());
    }
    if url.path() != "/" || raw.ends_with('/') || url.query().is_some() || url.fragment().is_some()
    {
        return Err("origin must not have a path, query or fragment".into());
    }
    Ok(url.origin().ascii_serialization())
}

/// The document's pattern for an origin: `http://` or `https://` (any case), DNS labels of
/// ASCII letters, digits and inner hyphens, and a port from 1 to 65535 without leading zeros.
/// (The URL parser alone would take `*` or `_` inside a host.)
pub(crate) fn shaped_like_an_origin(raw: &str) -> bool {
    let lower = raw.get(..8).unwrap_or(raw).to_ascii_lowercase();
    let Some(rest) = ["https://", "http://"]
        .iter()
        .find_map(|scheme| lower.starts_with(scheme).then(|| &raw[scheme.len()..]))
    else {
        return false;
    };
    let (host, port) = match rest.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    };
    let label_ok = |label: &str| {
        label.starts_with(|c: char| c.is_ascii_alphanumeric())
            && label.ends_with(|c: char| c.is_ascii_alphanumeric())
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    };
    let port_ok = |port: &str| {
        !port.starts_with('0')
            && port.chars().all(|c| c.is_ascii_digit())
            && port.parse::<u16>().is_ok_and(|p| p > 0)
    };
    host.split('.').all(label_ok) && port.is_none_or(port_ok)
}

/// Whether a request with this `Origin` header may use the widget of a project that allows
/// `allowed`: a browser origin must be listed (an empty list allows none); a request without
/// an `Origin` (a server's) is not restricted.
pub fn browser_allowed(origin: Option<&str>, allowed: &[String]) -> bool {
    match origin {
        None => true,
        Some(raw) => normalize(raw).is_ok_and(|o| allowed.contains(&o)),
    }
}

/// Validates a whole list; duplicates after normalisation collapse to one entry.
pub fn normalize_all(raw: &[String]) -> Result<Vec<String>, Vec<(usize, String)>> {
    let mut errors = Vec::new();
    let mut out: Vec<String> = Vec::with_capacity(raw.len());
    for (i, entry) in raw.iter().enumerate() {
        match normalize(entry) {
            Ok(origin) if !out.contains(&origin) => out.push(origin),
            Ok(_) => {}
            Err(e) => errors.push((i, e)),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_valid_origins() {
        for (origin, normalised) in [
            ("https://App.Example.com", "https://app.example.com"),
            ("https://example.com:443", "https://example.com"),
            ("http://localhost:3000", "http://localhost:3000"),
            ("HTTP://127.0.0.1:65535", "http://127.0.0.1:65535"),
        ] {
            assert_eq!(normalize(origin).unwrap(), normalised);
        }
    }

    #[test]
    fn refuses_anything_but_an_origin() {
        for bad in [
            "*",
            "example.com",
            "ftp://example.com",
            "https://example.com/app",
            "https://example.com/",
            "https://u:p@example.com",
            "https://example.com?x=1",
            "",
            "https://*.example.com",
            "https://sh*p.example",
            "https://shop_1.example",
            "https://-shop.example",
            "https://shop.example:0",
            "https://shop.example:080",
            "https://shop.example:65536",
            "https://[::1]:3000",
        ] {
            assert!(normalize(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn browsers_need_a_listed_origin_servers_do_not() {
        let allowed = vec!["https://shop.example".to_owned()];
        assert!(browser_allowed(None, &allowed));
        assert!(browser_allowed(None, &[]));
        assert!(browser_allowed(Some("https://SHOP.example:443"), &allowed));
        assert!(!browser_allowed(Some("https://evil.example"), &allowed));
        assert!(!browser_allowed(Some("null"), &allowed));
        assert!(!browser_allowed(Some("https://shop.example"), &[]));
    }

    #[test]
    fn list_reports_each_bad_index_and_dedups() {
        let list = vec![
            "https://a.com".to_owned(),
            "nope".to_owned(),
            "https://A.com:443".to_owned(),
        ];
        assert_eq!(
            normalize_all(&list)
                .unwrap_err()
                .iter()
                .map(|e| e.0)
                .collect::<Vec<_>>(),
            [1]
        );
        let ok = vec!["https://a.com".to_owned(), "https://A.com:443".to_owned()];
        assert_eq!(normalize_all(&ok).unwrap(), ["https://a.com"]);
    }
}
