//! The dashboard's static files, embedded in the binary and served under a name that holds a
//! hash of their content (`dashboard.3f2a…9c.css`), so they can be cached for a year: a
//! changed file is a new name. Each is gzipped once, at first use, and sent so to a browser
//! that accepts it: htmx is most of a first load's bytes. Pages are not compressed: they hold
//! the CSRF token and echo the search, which compression would let an attacker guess from
//! the sizes of the answers (BREACH).

use std::io::Write;
use std::sync::LazyLock;

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use flate2::Compression;
use flate2::write::GzEncoder;
use sha2::{Digest, Sha256};

use super::error::PageError;

pub struct Asset {
    /// `dashboard.css`
    pub name: &'static str,
    /// `dashboard.<hash>.css`
    pub hashed: String,
    content_type: &'static str,
    bytes: &'static [u8],
    gzipped: Bytes,
}

const FILES: &[(&str, &str, &[u8])] = &[
    (
        "dashboard.css",
        "text/css; charset=utf-8",
        include_bytes!("assets/dashboard.css"),
    ),
    (
        "htmx.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/htmx.min.js"),
    ),
    (
        "copy.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/copy.js"),
    ),
    (
        "cancel-flow-editor.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/cancel-flow-editor.js"),
    ),
    (
        "cancel-flow-preview.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/cancel-flow-preview.js"),
    ),
];

static ASSETS: LazyLock<Vec<Asset>> = LazyLock::new(|| {
    FILES
        .iter()
        .map(|(name, content_type, bytes)| {
            let hash = hex(&Sha256::digest(bytes)[..6]);
            let (stem, ext) = name
                .rsplit_once('.')
                .expect("asset names have an extension");
            let mut gzip = GzEncoder::new(Vec::new(), Compression::best());
            gzip.write_all(bytes).expect("writing to memory");
            Asset {
                name,
                hashed: format!("{stem}.{hash}.{ext}"),
                content_type,
                bytes,
                gzipped: gzip.finish().expect("writing to memory").into(),
            }
        })
        .collect()
});

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The URL of an asset by its plain name, for templates.
pub fn url(name: &str) -> String {
    let asset = ASSETS
        .iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("no dashboard asset named {name}"));
    format!("/app/assets/{}", asset.hashed)
}

pub async fn serve(Path(file): Path<String>, request: HeaderMap) -> Result<Response, PageError> {
    let asset = ASSETS
        .iter()
        .find(|a| a.hashed == file)
        .ok_or_else(PageError::not_found)?;
    let gzip = accepts_gzip(&request);
    let mut response = if gzip {
        asset.gzipped.clone().into_response()
    } else {
        asset.bytes.into_response()
    };
    let headers = response.headers_mut();
    if gzip {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    Ok(response)
}

/// Whether `Accept-Encoding` names gzip without refusing it (`q=0`).
fn accepts_gzip(request: &HeaderMap) -> bool {
    request
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            parts.next().is_some_and(|c| c.eq_ignore_ascii_case("gzip"))
                && parts.all(|p| p.replace(' ', "") != "q=0")
        })
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use axum::http::{HeaderMap, HeaderValue, header};

    #[test]
    fn gzipped_assets_unzip_to_the_file_and_go_only_where_accepted() {
        for asset in super::ASSETS.iter() {
            let mut unzipped = Vec::new();
            flate2::read::GzDecoder::new(&asset.gzipped[..])
                .read_to_end(&mut unzipped)
                .unwrap();
            assert_eq!(unzipped, asset.bytes, "{}", asset.name);
        }
        let accepts = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(value));
            super::accepts_gzip(&headers)
        };
        assert!(accepts("gzip, deflate, br, zstd"));
        assert!(accepts("br;q=1.0, GZIP;q=0.5"));
        assert!(!accepts("br"));
        assert!(!accepts("gzip;q=0, br"));
        assert!(!super::accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn names_carry_a_hash_of_the_content() {
        let css = super::url("dashboard.css");
        let hash = css
            .strip_prefix("/app/assets/dashboard.")
            .and_then(|rest| rest.strip_suffix(".css"))
            .unwrap();
        assert_eq!(hash.len(), 12);
        assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(super::url("htmx.min.js"), css);
    }
}
