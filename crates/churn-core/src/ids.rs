//! Identifiers: UUIDv7 strings, time-ordered so that ordering by id follows creation.

use uuid::Uuid;

pub fn new_id() -> String {
    Uuid::now_v7().to_string()
}
