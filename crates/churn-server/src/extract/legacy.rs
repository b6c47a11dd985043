//! The extractors of the unscoped routes: the same as elsewhere, rejecting in the older error
//! shape.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::{ApiJson, ApiQuery, Caller};
use crate::error::LegacyError;
use crate::state::AppState;

pub struct LegacyCaller(pub Caller);

impl FromRequestParts<AppState> for LegacyCaller {
    type Rejection = LegacyError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(LegacyCaller(
            Caller::from_request_parts(parts, state).await?,
        ))
    }
}

pub struct LegacyJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for LegacyJson<T> {
    type Rejection = LegacyError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let ApiJson(value) = ApiJson::<T>::from_request(req, state).await?;
        Ok(LegacyJson(value))
    }
}

pub struct LegacyQuery<T>(pub T);

impl<T: DeserializeOwned> FromRequestParts<AppState> for LegacyQuery<T> {
    type Rejection = LegacyError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let ApiQuery(value) = ApiQuery::<T>::from_request_parts(parts, state).await?;
        Ok(LegacyQuery(value))
    }
}
