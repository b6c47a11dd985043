//! Project slugs: lower-case ASCII, single hyphens, at most 48 characters, unique per user.

pub const MAX_SLUG_LEN: usize = 48;

pub fn slugify(name: &str) -> String {
    let mut slug = String::with_capacity(name.len().min(MAX_SLUG_LEN));
    let mut pending_hyphen = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if pending_hyphen && !slug.is_empty() {
                slug.push('-');
            }
            pending_hyphen = false;
            slug.push(c.to_ascii_lowercase());
        } else {
            pending_hyphen = true;
        }
        if slug.len() >= MAX_SLUG_LEN {
            break;
        }
    }
    slug.truncate(MAX_SLUG_LEN);
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "project".to_owned()
    } else {
        slug.to_owned()
    }
}

/// The slug to try after `slug` collided: `<slug>-<first 6 hex chars of a fresh UUID>`,
/// the base shortened so the whole stays within `MAX_SLUG_LEN`.
pub fn with_suffix(slug: &str, fresh_uuid: &uuid::Uuid) -> String {
    let hex = fresh_uuid.simple().to_string();
    let base = &slug[..slug.len().min(MAX_SLUG_LEN - 7)];
    format!("{}-{}", base.trim_end_matches('-'), &hex[..6])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_slug_rules() {
        assert_eq!(slugify("Acme Analytics"), "acme-analytics");
        assert_eq!(slugify("  --Hello,   World!!-- "), "hello-world");
        assert_eq!(slugify("Café Über"), "caf-ber");
        assert_eq!(slugify("日本語"), "project");
        assert_eq!(slugify(""), "project");
        let long = slugify(&"ab ".repeat(40));
        assert!(long.len() <= MAX_SLUG_LEN && !long.ends_with('-'), "{long}");
    }

    #[test]
    fn suffix_is_six_hex_chars() {
        let id = uuid::Uuid::parse_str("0192f0c4-8b1e-7abc-9def-0123456789ab").unwrap();
        assert_eq!(with_suffix("acme", &id), "acme-0192f0");
        let long = slugify(&"word ".repeat(20));
        let suffixed = with_suffix(&long, &id);
        assert!(
            suffixed.len() <= MAX_SLUG_LEN
                && suffixed.ends_with("-0192f0")
                && !suffixed.contains("--"),
            "{suffixed}"
        );
    }

    proptest::proptest! {
        #[test]
        fn any_name_gives_a_url_safe_slug(name in ".{0,200}") {
            let slug = slugify(&name);
            proptest::prop_assert!(!slug.is_empty() && slug.len() <= MAX_SLUG_LEN);
            proptest::prop_assert!(slug.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
            proptest::prop_assert!(!slug.starts_with('-') && !slug.ends_with('-') && !slug.contains("--"));
        }
    }
}
