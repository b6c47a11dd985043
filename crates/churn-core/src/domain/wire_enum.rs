//! Enums whose wire name (JSON and storage alike) is written once per variant: the serde
//! rename, `as_str`, `parse`, `TryFrom<String>` (rows decode through it) and `ALL` all come
//! from the same list, so they cannot disagree. A variant may add older names after `|`:
//! accepted on input (and from rows written before a rename), never sent.

/// A stored or sent name that no variant has.
#[derive(Debug, thiserror::Error)]
#[error("unknown name {0:?}")]
pub struct UnknownName(pub String);

macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:tt $(| $alias:tt)*, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(serde::Serialize, serde::Deserialize)]
        $vis enum $name {
            $( $(#[$vmeta])* #[serde(rename = $wire $(, alias = $alias)*)] $variant, )+
        }

        impl $name {
            pub const ALL: [$name; [$(stringify!($variant)),+].len()] = [$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $wire, )+
                }
            }

            pub fn parse(raw: &str) -> Option<Self> {
                match raw {
                    $( $wire $(| $alias)* => Some($name::$variant), )+
                    _ => None,
                }
            }
        }

        impl TryFrom<String> for $name {
            type Error = $crate::domain::wire_enum::UnknownName;

            fn try_from(raw: String) -> Result<Self, Self::Error> {
                Self::parse(&raw).ok_or($crate::domain::wire_enum::UnknownName(raw))
            }
        }
    };
}

pub(crate) use wire_enum;

#[cfg(test)]
mod tests {
    use crate::domain::{
        cancel_session::SessionStatus, lifecycle::EventStatus, role::Role, strategy::ReasonCode,
        strategy::Strategy, variant::VariantStatus,
    };

    /// The names the enums answer with in JSON are the names they are stored under.
    #[test]
    fn serde_names_are_the_stored_names() {
        fn check<
            T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug + Copy,
        >(
            all: &[T],
            as_str: fn(T) -> &'static str,
            parse: fn(&str) -> Option<T>,
        ) {
            for &v in all {
                let json = serde_json::to_value(v).unwrap();
                assert_eq!(json, as_str(v), "{v:?}");
                assert_eq!(serde_json::from_value::<T>(json).unwrap(), v);
                assert_eq!(parse(as_str(v)), Some(v));
            }
            assert_eq!(parse("no-such-name"), None);
        }
        check(&EventStatus::ALL, EventStatus::as_str, EventStatus::parse);
        check(
            &SessionStatus::ALL,
            SessionStatus::as_str,
            SessionStatus::parse,
        );
        check(&Role::ALL, Role::as_str, Role::parse);
        check(&Strategy::ALL, Strategy::as_str, Strategy::parse);
        check(&ReasonCode::ALL, ReasonCode::as_str, ReasonCode::parse);
        check(
            &VariantStatus::ALL,
            VariantStatus::as_str,
            VariantStatus::parse,
        );
    }

    /// The OpenAPI document lists the same names (a proc macro must see them through the
    /// `macro_rules!` expansion).
    #[test]
    fn openapi_enums_are_the_wire_names() {
        use utoipa::PartialSchema;
        let schema = serde_json::to_value(EventStatus::schema()).unwrap();
        let names: Vec<&str> = EventStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(schema["enum"], serde_json::json!(names), "{schema}");
    }
}
