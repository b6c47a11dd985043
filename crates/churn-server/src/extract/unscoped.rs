//! The extractors of the unscoped routes: the same as elsewhere, rejecting in the older error
//! shape.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::{ApiJson, ApiQuery, Caller};
use crate::error::UnscopedError;
use crate::state::AppState;

pub struct UnscopedCaller(pub Caller);

impl FromRequestParts<AppState> for UnscopedCaller {
    type Rejection = UnscopedError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(UnscopedCaller(
            Caller::from_request_parts(parts, state).await?,
        ))
    }
}

pub struct UnscopedJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for UnscopedJson<T> {
    type Rejection = UnscopedError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let ApiJson(value) = ApiJson::<T>::from_request(req, state).await?;
        Ok(UnscopedJson(value))
    }
}

pub struct UnscopedQuery<T>(pub T);

impl<T: DeserializeOwned> FromRequestParts<AppState> for UnscopedQuery<T> {
    type Rejection = UnscopedError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let ApiQuery(value) = ApiQuery::<T>::from_request_parts(parts, state).await?;
        Ok(UnscopedQuery(value))
    }
}
