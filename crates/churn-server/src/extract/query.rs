//! Query strings whose rejections use the API's error body and name the bad parameter, a
//! repeated one included. (A NUL in any parameter is refused before routing, in
//! `middleware::request_guards`.)

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use churn_core::api::FieldError;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let raw = parts.uri.query().unwrap_or("");
        let de = serde_urlencoded::Deserializer::new(url::form_urlencoded::parse(raw.as_bytes()));
        serde_path_to_error::deserialize(de)
            .map(ApiQuery)
            .map_err(|e| {
                let path = e.path().to_string();
                let message = e.into_inner().to_string();
                // A repeated parameter is reported at the top level; name it instead.
                let field = message
                    .strip_prefix("duplicate field `")
                    .and_then(|rest| rest.split_once('`'))
                    .map_or(path, |(name, _)| name.to_owned());
                ApiError::validation(
                    format!("{field}: {message}"),
                    vec![FieldError { field, message }],
                )
            })
    }
}
