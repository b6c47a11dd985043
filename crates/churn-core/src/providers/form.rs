//! Stripe's form encoding: nested objects as `key[sub]`, arrays always indexed
//! (`discounts[0][coupon]`), booleans as `true`/`false`, and `null` as the empty string,
//! which clears a field (`pause_collection=`).

use serde_json::Value;

/// The form pairs of a JSON object, in key order; anything but an object encodes to nothing.
pub fn encode(params: &Value) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    if let Value::Object(map) = params {
        for (key, value) in map {
            push(&mut pairs, key.clone(), value);
        }
    }
    pairs
}

fn push(pairs: &mut Vec<(String, String)>, key: String, value: &Value) {
    match value {
        Value::Object(map) => {
            for (sub, v) in map {
                push(pairs, format!("{key}[{sub}]"), v);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                push(pairs, format!("{key}[{i}]"), v);
            }
        }
        Value::Null => pairs.push((key, String::new())),
        Value::Bool(b) => pairs.push((key, b.to_string())),
        Value::Number(n) => pairs.push((key, n.to_string())),
        Value::String(s) => pairs.push((key, s.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(v: Value) -> Vec<(String, String)> {
        encode(&v)
    }

    #[test]
    fn nested_values_use_brackets_and_arrays_are_indexed() {
        assert_eq!(
            pairs(json!({
                "discounts": [{"coupon": "Z4OV52SU"}, {"promotion_code": "promo_1"}],
                "pause_collection": {"behavior": "void", "resumes_at": 1766412790},
                "metadata": {"churn_offer_id": "off 1&2"},
                "off_session": true,
                "expand": ["payments.data.payment.payment_intent"],
            })),
            [
                ("discounts[0][coupon]", "Z4OV52SU"),
                ("discounts[1][promotion_code]", "promo_1"),
                ("expand[0]", "payments.data.payment.payment_intent"),
                ("metadata[churn_offer_id]", "off 1&2"),
                ("off_session", "true"),
                ("pause_collection[behavior]", "void"),
                ("pause_collection[resumes_at]", "1766412790"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
    }

    #[test]
    fn null_clears_and_non_objects_encode_to_nothing() {
        assert_eq!(
            pairs(json!({"pause_collection": null, "percent_off": 30.5})),
            [
                ("pause_collection".to_owned(), String::new()),
                ("percent_off".to_owned(), "30.5".to_owned())
            ]
        );
        assert!(pairs(json!(["a"])).is_empty());
        assert!(pairs(json!({})).is_empty());
    }
}
