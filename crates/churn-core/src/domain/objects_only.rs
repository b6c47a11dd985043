//! Request types that read from a JSON object only. serde's derived `Deserialize` also reads a
//! struct from an array, field by field in order, so `"copy": [null, null]` would pass as a
//! copy with nothing set; no request of the interface sends an object as an array. A type
//! derives with `#[serde(remote = "Self")]` (which makes the derived code inherent functions)
//! and is named in `objects_only!`, whose trait impls call that code on objects only.

macro_rules! objects_only {
    ($($name:ty),+ $(,)?) => {$(
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                <$name>::serialize(self, serializer)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Object;

                impl<'de> serde::de::Visitor<'de> for Object {
                    type Value = $name;

                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("an object")
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        map: A,
                    ) -> Result<$name, A::Error> {
                        <$name>::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    }
                }

                deserializer.deserialize_map(Object)
            }
        }
    )+};
}

pub(crate) use objects_only;
