"""Fixture data for scripts/schemathesis, made through the API of a fresh server.

Usage: schemathesis-fixtures.py <base url> <work dir>

Creates a user with two projects, churn events (some with generated variants, one sent so
that its tracking token exists), and writes <work dir>/schemathesis-{api_key,bearer}.toml:
schemathesis configs that authenticate with the secret key or the JWT and bind every path
parameter, half the time, to one of these real objects.
"""

import json
import pathlib
import re
import sys
import urllib.request

BASE, WORK = sys.argv[1], pathlib.Path(sys.argv[2])


def call(method, path, body=None, token=None, key=None, expect=(200, 201)):
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    if key:
        headers["x-api-key"] = key
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + "/api/v1" + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(req) as resp:
        assert resp.status in expect, (method, path, resp.status)
        return json.load(resp)


token = call(
    "POST",
    "/auth/register",
    {"name": "Fixture Owner", "email": "owner@example.com", "password": "fixture password"},
)["data"]["token"]

projects = []
for name in ["Fixture", "Second fixture"]:
    p = call(
        "POST",
        "/projects",
        {"name": name, "product_type": "SaaS", "support_email": "help@example.com"},
        token=token,
    )["data"]
    projects.append(p)
main = projects[0]
secret = main["api_keys"]["secret_key"]

events, variants = [], []
reasons = ["too_expensive", "missing_features", "the app kept crashing", None]
for i, reason in enumerate(reasons):
    body = {
        "customer_email": f"customer{i}@example.com",
        "customer_name": f"Customer {i}",
        "event_type": "cancellation" if i % 2 == 0 else "payment_failed",
        "mrr": 4900 + i,
        "currency": "usd",
        "plan_name": "Pro",
        "tenure_days": 100 + i,
    }
    if reason:
        body["cancel_reason"] = reason
    event = call("POST", f"/projects/{main['slug']}/churn-events", body, key=secret)["data"]
    events.append(event["id"])
    if i < 2:
        generated = call(
            "POST", f"/projects/{main['slug']}/churn-events/{event['id']}/generate", key=secret
        )["data"]
        variants += [v["id"] for v in generated["variants"]]
other = call(
    "POST",
    f"/projects/{projects[1]['slug']}/churn-events",
    {"customer_email": "other@example.com", "event_type": "cancellation"},
    token=token,
)["data"]
events.append(other["id"])

# One sent email gives a real open pixel and click link.
call("POST", f"/projects/{main['slug']}/churn-events/{events[0]}/variants/{variants[0]}/send", key=secret)
tracking = []
for eml in (WORK / "outbox").glob("*.eml"):
    text = eml.read_text(errors="replace").replace("=\r\n", "").replace("=\n", "")
    tracking += re.findall(r"/t/([A-Za-z0-9_.~-]+?)\.gif", text)
assert tracking, "no tracking pixel in the sent email"

# Tracked behaviour for the first customers (customers are also made by the churn events above).
call(
    "POST",
    "/track",
    {"events": [{"event": "login", "customer_email": f"customer{i}@example.com"} for i in range(2)]},
    key=secret,
)
# A pending invitation, and the owner as the one member to name.
invitation = call("POST", f"/projects/{main['slug']}/invitations", {"email": "invitee@example.com"}, token=token)["data"]
owner_id = call("GET", f"/projects/{main['slug']}/members", token=token)["data"][0]["id"]

dictionaries = {
    "slug": [main["slug"], main["id"], projects[1]["slug"]],
    "event": events,
    "variant": variants,
    "pixel": [f"{t}.gif" for t in tracking],
    "token": tracking,
    "customer": [f"customer{i}@example.com" for i in range(len(reasons))],
    "public_key": [main["api_keys"]["public_key"]],
    "invitation": [invitation["id"]],
    "user": [owner_id],
}
bindings = {
    "path.slug": "slug",
    "path.id": "event",
    "path.vid": "variant",
    "path.variant_id": "variant",
    "path.pixel": "pixel",
    "path.token": "token",
    "path.email": "customer",
    "path.public_key": "public_key",
    "path.invitation_id": "invitation",
    "path.user_id": "user",
    "path.publicKey": "public_key",
    "query.public_key": "public_key",
    "header.X-Public-Key": "public_key",
}


def toml_list(values):
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


# Well-formed requests that the contract refuses with 400 because of an object's state or
# of the caller's account: an event already recovered or generated, a send before
# generation, an unknown reset or verification token, an unscoped call without ?project= by a user with
# several projects, a change to the owner's membership; a tracked event whose timestamp lies
# outside the accepted window, or whose properties exceed 8 KiB, which JSON Schema cannot say
# against the service clock.
STATEFUL_400 = [
    "track_events",
    "mark_churn_event_recovered",
    "mark_churn_event_recovered_unscoped",
    "change_cancel_reason",
    "edit_variant",
    "generate_variants",
    "generate_variants_unscoped",
    "send_variant",
    "send_variant_unscoped",
    "list_churn_events_unscoped",
    "create_churn_event_unscoped",
    "reset_password",
    "verify_email",
    "change_member_role",
    "remove_member",
    # A flow refuses what its schema cannot say: a reason code twice, an offer for a reason
    # not in the flow, a reason outside the flow, a pause beyond the offer's maximum.
    "put_cancel_flow",
    "submit_cancel_reason",
    "get_cancel_flow_config",
    # A provider's delivery is refused with 400 without its signature headers, or when the
    # provider is not connected (decisions §10); neither is in the schema.
    "receive_provider_webhook",
]
common = """# Known differences worked around until they are fixed: see schemathesis_hooks.py.
hooks = "schemathesis_hooks"

[generation]
# NUL characters are refused with 400 (decisions §3), which JSON Schema cannot say simply.
allow-x00 = false

[checks]
# schemathesis's own list plus 414: a parameter long enough to push the request target over
# 8 KiB is refused by the URI guard (URI_TOO_LONG), a rejection like the others.
negative_data_rejection.expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "414", "415", "422", "428", "429", "5xx"]

[[operations]]
include-operation-id-regex = "^(%s)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]

# Not configured here (it needs a JWKS server): 500 `identity provider is not configured`.
[[operations]]
include-operation-id = "sign_in_with_identity_provider"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "500"]

""" % "|".join(STATEFUL_400)
common += "[dictionaries]\n"
common += "".join(f"{name} = {{ values = {toml_list(vals)} }}\n" for name, vals in dictionaries.items())
common += "\n[parameters]\n"
common += "".join(
    f'"{param}" = {{ dictionary = "{name}", probability = 0.5 }}\n' for param, name in bindings.items()
)
(WORK / "schemathesis-api_key.toml").write_text(common + f'\n[auth.openapi.api_key]\napi_key = "{secret}"\n')
# Logging out everywhere would leave the rest of the JWT run with nothing but 401s (and test
# nothing): that route is left to the API tests.
keep_session = """
[[operations]]
include-operation-id = "logout_all"
enabled = false
"""
(WORK / "schemathesis-bearer.toml").write_text(
    common + keep_session + f'\n[auth.openapi.bearer]\nbearer = "{token}"\n'
)
print(json.dumps(dictionaries, indent=2))
