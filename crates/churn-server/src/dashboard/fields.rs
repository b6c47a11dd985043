//! A form read as the name–value pairs it posted, in order (`Form<Vec<(String, String)>>`): the
//! forms whose names repeat (a hidden `false` before each checkbox, prefixed variants).

/// The first value posted under `name`.
pub fn value(posted: &[(String, String)], name: &str) -> Option<String> {
    posted
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

/// Whether the checkbox `name` was ticked (its hidden `false` comes first either way).
pub fn checked(posted: &[(String, String)], name: &str) -> bool {
    posted.iter().any(|(k, v)| k == name && v == "true")
}
