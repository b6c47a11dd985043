//! Password policy. Hashing lives with the services: it is slow by design and runs off the
//! async runtime.

pub const MIN_PASSWORD_LEN: usize = 8;
/// Bounds the work an attacker can make one hash cost.
pub const MAX_PASSWORD_LEN: usize = 1024;

pub fn check(password: &str) -> Result<(), String> {
    let len = password.chars().count();
    if len < MIN_PASSWORD_LEN {
        return Err(format!("must be at least {MIN_PASSWORD_LEN} characters"));
    }
    if len > MAX_PASSWORD_LEN {
        return Err(format!("must be at most {MAX_PASSWORD_LEN} characters"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn enforces_length_bounds() {
        assert!(super::check("1234567").is_err());
        assert!(super::check("12345678").is_ok());
        assert!(super::check(&"x".repeat(1025)).is_err());
    }
}
