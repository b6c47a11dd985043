"""schemathesis hooks for scripts/schemathesis.

The server reads integer fields with serde, which refuses `1121.0` while JSON Schema counts
it as the integer 1121. Until the JSON extractor accepts integral floats, bodies are sent
with such numbers written as integers, so that this known difference does not hide others.
"""

import schemathesis


def _integral_floats_as_ints(value):
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, list):
        return [_integral_floats_as_ints(v) for v in value]
    if isinstance(value, dict):
        return {k: _integral_floats_as_ints(v) for k, v in value.items()}
    return value


@schemathesis.hook
def map_body(context, body):
    return _integral_floats_as_ints(body)
