//! The role matrix of decisions §6, route family by route family: every role (and the
//! project's secret key, which acts as a member) against every route that exists. A route
//! family is one row of [`families`]: the lowest role it allows, whether the secret key is
//! accepted, the status of an allowed call, and the request. Calls that change or use up an
//! object get a fresh one (see [`Fresh`]). Add a row for every new project route.

use churn_core::domain::role::Role;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, acme_owner, event_with_variants, post_event};
use crate::team::{accept, id_of, invite, join, members, token_of};
use churn_core::both_backends;

both_backends!(every_role_against_every_route_family);

/// What a family's call uses up, made afresh (by the owner) before each call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fresh {
    Nothing,
    /// A new churn event (`Objects::event`).
    Event,
    /// A new event with its drafts (`Objects::event`, `Objects::variant`).
    Drafts,
    /// A pending invitation (`Objects::invitation`).
    Invitation,
    /// `target@acme.io` back in the project as a viewer (`Objects::target`).
    Target,
}

/// The ids a call may name.
#[derive(Default)]
struct Objects {
    event: String,
    variant: String,
    invitation: String,
    target: String,
    /// An address used nowhere yet.
    email: String,
}

struct Family {
    name: &'static str,
    /// The lowest role allowed; `None` when no session is accepted ([`KEY_ONLY`]).
    lowest: Option<Role>,
    /// Whether the project's secret key is accepted (as a member); else it is 401.
    key: bool,
    ok: u16,
    fresh: Fresh,
    call: fn(&Objects) -> (Method, String, Option<Value>),
}

const P: &str = "/projects/acme";
/// The fixture's customer: known from its churn event.
const CUSTOMER: &str = "dana@example.com";
/// An id no object has.
const UNKNOWN: &str = "00000000-0000-7000-8000-000000000000";
/// `lowest` of a route that takes no session at all: every signed-in caller gets 401.
const KEY_ONLY: Option<Role> = None;

fn families() -> Vec<Family> {
    use Fresh::*;
    use Method as M;
    let f = |name, lowest: Role, key, ok, fresh, call| Family {
        name,
        lowest: Some(lowest),
        key,
        ok,
        fresh,
        call,
    };
    vec![
        // Project administration (decisions §5, §6).
        f("project: read", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, P.into(), None)
        }),
        f("project: update", Role::Admin, false, 200, Nothing, |_| {
            (M::PATCH, P.into(), Some(json!({"name": "Acme"})))
        }),
        f("project: replace", Role::Admin, false, 200, Nothing, |_| {
            (M::PUT, P.into(), Some(json!({"name": "Acme"})))
        }),
        f("project: origins", Role::Admin, false, 200, Nothing, |_| {
            (
                M::PUT,
                format!("{P}/allowed-origins"),
                Some(json!({"allowed_origins": []})),
            )
        }),
        f(
            "project: webhook secret",
            Role::Admin,
            false,
            200,
            Nothing,
            |_| (M::GET, format!("{P}/webhook-secret"), None),
        ),
        f(
            "project: rotate webhook secret",
            Role::Admin,
            false,
            200,
            Nothing,
            |_| (M::POST, format!("{P}/webhook-secret/rotate"), None),
        ),
        f(
            "project: identity secret",
            Role::Admin,
            false,
            200,
            Nothing,
            |_| (M::GET, format!("{P}/identity-secret"), None),
        ),
        f(
            "project: rotate identity secret",
            Role::Admin,
            false,
            200,
            Nothing,
            |_| (M::POST, format!("{P}/identity-secret/rotate"), None),
        ),
        f(
            "project: rotate keys",
            Role::Owner,
            false,
            200,
            Nothing,
            |_| (M::POST, format!("{P}/rotate-keys"), None),
        ),
        // Email rules: a listed address is not needed to pass the policy (allowed: 404).
        f(
            "suppressions: list",
            Role::Viewer,
            true,
            200,
            Nothing,
            |_| (M::GET, format!("{P}/suppressions"), None),
        ),
        f(
            "suppressions: delete",
            Role::Admin,
            false,
            404,
            Nothing,
            |o| (M::DELETE, format!("{P}/suppressions/{}", o.email), None),
        ),
        f(
            "email settings: read",
            Role::Admin,
            false,
            200,
            Nothing,
            |_| (M::GET, format!("{P}/email-settings"), None),
        ),
        f(
            "email settings: write",
            Role::Admin,
            false,
            200,
            Nothing,
            |_| (M::PUT, format!("{P}/email-settings"), Some(json!({}))),
        ),
        // Allowed, it is refused for want of a sender (400).
        f(
            "email settings: verify",
            Role::Admin,
            false,
            400,
            Nothing,
            |_| (M::POST, format!("{P}/email-settings/verify"), None),
        ),
        // Churn events and recovery emails.
        f("events: list", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, format!("{P}/churn-events"), None)
        }),
        f("events: read", Role::Viewer, true, 200, Nothing, |o| {
            (M::GET, format!("{P}/churn-events/{}", o.event), None)
        }),
        f("events: variants", Role::Viewer, true, 200, Nothing, |o| {
            (
                M::GET,
                format!("{P}/churn-events/{}/variants", o.event),
                None,
            )
        }),
        f("events: create", Role::Member, true, 201, Nothing, |o| {
            let body = json!({"customer_email": o.email, "event_type": "cancellation"});
            (M::POST, format!("{P}/churn-events"), Some(body))
        }),
        f("events: recover", Role::Member, true, 200, Event, |o| {
            (
                M::POST,
                format!("{P}/churn-events/{}/recovered", o.event),
                None,
            )
        }),
        f(
            "events: cancel reason",
            Role::Member,
            true,
            200,
            Event,
            |o| {
                let body = json!({"cancel_reason": "too_expensive"});
                (
                    M::PATCH,
                    format!("{P}/churn-events/{}/cancel-reason", o.event),
                    Some(body),
                )
            },
        ),
        f("events: generate", Role::Member, true, 200, Event, |o| {
            (
                M::POST,
                format!("{P}/churn-events/{}/generate", o.event),
                None,
            )
        }),
        f("variants: edit", Role::Member, true, 200, Drafts, |o| {
            let path = format!("{P}/churn-events/{}/variants/{}", o.event, o.variant);
            (M::PATCH, path, Some(json!({"subject": "Come back"})))
        }),
        f("variants: send", Role::Member, true, 200, Drafts, |o| {
            let path = format!("{P}/churn-events/{}/variants/{}/send", o.event, o.variant);
            (M::POST, path, None)
        }),
        f(
            "events (unscoped): list",
            Role::Viewer,
            true,
            200,
            Nothing,
            |_| (M::GET, "/churn-events?project=acme".into(), None),
        ),
        f(
            "events (unscoped): create",
            Role::Member,
            true,
            201,
            Nothing,
            |o| {
                let body = json!({"customer_email": o.email});
                (M::POST, "/churn-events?project=acme".into(), Some(body))
            },
        ),
        f("statistics", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, format!("{P}/stats"), None)
        }),
        f("cohorts", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, format!("{P}/cohorts"), None)
        }),
        f("forecasting", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, format!("{P}/forecasting"), None)
        }),
        f("uplift", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, format!("{P}/analytics/uplift"), None)
        }),
        f(
            "cancel-flow funnel",
            Role::Viewer,
            true,
            200,
            Nothing,
            |_| (M::GET, format!("{P}/analytics/cancel-flow"), None),
        ),
        // Tracking and customers (decisions §8). `/track` takes the secret key alone.
        Family {
            name: "tracking",
            lowest: KEY_ONLY,
            key: true,
            ok: 200,
            fresh: Nothing,
            call: |o| {
                let body = json!({"event": "login", "customer_email": o.email});
                (M::POST, "/track".into(), Some(body))
            },
        },
        f("customers: list", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, format!("{P}/customers"), None)
        }),
        f("customers: read", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, format!("{P}/customers/{CUSTOMER}"), None)
        }),
        f(
            "customers: timeline",
            Role::Viewer,
            true,
            200,
            Nothing,
            |_| (M::GET, format!("{P}/customers/{CUSTOMER}/events"), None),
        ),
        f("event analytics", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, format!("{P}/analytics/events"), None)
        }),
        // Churn risk (decisions §9).
        f("risk: list", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, format!("{P}/churn-risk/customers"), None)
        }),
        // Not scored yet: allowed, it is 404.
        f("risk: customer", Role::Viewer, true, 404, Nothing, |_| {
            (M::GET, format!("{P}/churn-risk/customers/{CUSTOMER}"), None)
        }),
        f("risk: recompute", Role::Member, true, 200, Nothing, |_| {
            (M::POST, format!("{P}/churn-risk/recompute"), None)
        }),
        f(
            "risk: config read",
            Role::Viewer,
            true,
            200,
            Nothing,
            |_| (M::GET, format!("{P}/churn-risk/config"), None),
        ),
        f(
            "risk: config write",
            Role::Admin,
            false,
            200,
            Nothing,
            |_| {
                let body = json!({"risk_threshold": 70});
                (M::PUT, format!("{P}/churn-risk/config"), Some(body))
            },
        ),
        f("risk: model", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, format!("{P}/churn-risk/model"), None)
        }),
        f("risk: alerts", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, format!("{P}/churn-risk/alerts"), None)
        }),
        f("risk: redeliver", Role::Admin, false, 404, Nothing, |_| {
            (
                M::POST,
                format!("{P}/churn-risk/alerts/{UNKNOWN}/redeliver"),
                None,
            )
        }),
        // Outcome webhook endpoints (decisions §19): members read, admins write. An allowed
        // call on an unknown endpoint is 404; an allowed creation with an http URL is 400.
        f("endpoints: list", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, format!("{P}/webhook-endpoints"), None)
        }),
        f("endpoints: get", Role::Viewer, true, 404, Nothing, |_| {
            (M::GET, format!("{P}/webhook-endpoints/{UNKNOWN}"), None)
        }),
        f(
            "endpoints: deliveries",
            Role::Viewer,
            true,
            404,
            Nothing,
            |_| {
                (
                    M::GET,
                    format!("{P}/webhook-endpoints/{UNKNOWN}/deliveries"),
                    None,
                )
            },
        ),
        f(
            "endpoints: create",
            Role::Admin,
            false,
            400,
            Nothing,
            |_| {
                let body =
                    json!({"url": "http://hooks.example.com", "event_types": ["churn_risk.alert"]});
                (M::POST, format!("{P}/webhook-endpoints"), Some(body))
            },
        ),
        f(
            "endpoints: update",
            Role::Admin,
            false,
            404,
            Nothing,
            |_| {
                let body = json!({"enabled": false});
                (
                    M::PATCH,
                    format!("{P}/webhook-endpoints/{UNKNOWN}"),
                    Some(body),
                )
            },
        ),
        f(
            "endpoints: delete",
            Role::Admin,
            false,
            404,
            Nothing,
            |_| (M::DELETE, format!("{P}/webhook-endpoints/{UNKNOWN}"), None),
        ),
        f("endpoints: test", Role::Admin, false, 404, Nothing, |_| {
            (
                M::POST,
                format!("{P}/webhook-endpoints/{UNKNOWN}/test"),
                None,
            )
        }),
        f(
            "endpoints: redeliver",
            Role::Admin,
            false,
            404,
            Nothing,
            |_| {
                (
                    M::POST,
                    format!("{P}/webhook-endpoints/{UNKNOWN}/deliveries/{UNKNOWN}/redeliver"),
                    None,
                )
            },
        ),
        // Payment providers and dunning (decisions §10). No failure is needed to pass the
        // policy: an allowed call on an unknown one is 404.
        f("providers: list", Role::Admin, false, 200, Nothing, |_| {
            (M::GET, format!("{P}/providers"), None)
        }),
        f(
            "providers: connect",
            Role::Admin,
            false,
            200,
            Nothing,
            |_| (M::PUT, format!("{P}/providers/custom"), Some(json!({}))),
        ),
        f(
            "providers: disconnect",
            Role::Admin,
            false,
            404,
            Nothing,
            |_| (M::DELETE, format!("{P}/providers/razorpay"), None),
        ),
        f("payments: list", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, format!("{P}/payment-failures"), None)
        }),
        f("payments: stats", Role::Viewer, true, 200, Nothing, |_| {
            (M::GET, format!("{P}/payment-failures/stats"), None)
        }),
        f("payments: read", Role::Viewer, true, 404, Nothing, |_| {
            (M::GET, format!("{P}/payment-failures/{UNKNOWN}"), None)
        }),
        f("payments: retry", Role::Member, true, 404, Nothing, |_| {
            (
                M::POST,
                format!("{P}/payment-failures/{UNKNOWN}/retry"),
                None,
            )
        }),
        // Configurations are read by every role (viewers read everything) but changed by
        // admins, both with a session only.
        f(
            "dunning: config read",
            Role::Viewer,
            false,
            200,
            Nothing,
            |_| (M::GET, format!("{P}/dunning-config"), None),
        ),
        f(
            "dunning: config write",
            Role::Admin,
            false,
            200,
            Nothing,
            |_| (M::PUT, format!("{P}/dunning-config"), Some(json!({}))),
        ),
        // Cancel flow (decisions §11); its public routes take the public key, not a role.
        f(
            "cancel flow: read",
            Role::Viewer,
            false,
            200,
            Nothing,
            |_| (M::GET, format!("{P}/cancel-flow"), None),
        ),
        f(
            "cancel flow: sessions",
            Role::Viewer,
            true,
            200,
            Nothing,
            |_| (M::GET, format!("{P}/cancel-flow/sessions"), None),
        ),
        f(
            "cancel flow: write",
            Role::Admin,
            false,
            200,
            Nothing,
            |_| {
                let body = json!({"reasons": [{"code": "other", "label": "Something else"}]});
                (M::PUT, format!("{P}/cancel-flow"), Some(body))
            },
        ),
        // Segmented cancel flows (decisions §19): as the default flow's configuration.
        f(
            "cancel flows: list",
            Role::Viewer,
            false,
            200,
            Nothing,
            |_| (M::GET, format!("{P}/cancel-flows"), None),
        ),
        f(
            "cancel flows: read",
            Role::Viewer,
            false,
            404,
            Nothing,
            |_| (M::GET, format!("{P}/cancel-flows/{UNKNOWN}"), None),
        ),
        f(
            "cancel flows: create",
            Role::Admin,
            false,
            201,
            Nothing,
            |_| {
                let body = json!({"name": "Pro", "reasons": [{"code": "other", "label": "Other"}]});
                (M::POST, format!("{P}/cancel-flows"), Some(body))
            },
        ),
        f(
            "cancel flows: replace",
            Role::Admin,
            false,
            404,
            Nothing,
            |_| {
                let body = json!({"name": "Pro", "reasons": [{"code": "other", "label": "Other"}]});
                (M::PUT, format!("{P}/cancel-flows/{UNKNOWN}"), Some(body))
            },
        ),
        f(
            "cancel flows: delete",
            Role::Admin,
            false,
            404,
            Nothing,
            |_| (M::DELETE, format!("{P}/cancel-flows/{UNKNOWN}"), None),
        ),
        f(
            "cancel flows: experiment results",
            Role::Viewer,
            false,
            404,
            Nothing,
            |_| (M::GET, format!("{P}/cancel-flows/{UNKNOWN}/results"), None),
        ),
        // Team (decisions §14).
        f("members: list", Role::Viewer, false, 200, Nothing, |_| {
            (M::GET, format!("{P}/members"), None)
        }),
        f(
            "members: change role",
            Role::Admin,
            false,
            200,
            Target,
            |o| {
                let path = format!("{P}/members/{}", o.target);
                (M::PATCH, path, Some(json!({"role": "viewer"})))
            },
        ),
        f("members: remove", Role::Admin, false, 204, Target, |o| {
            (M::DELETE, format!("{P}/members/{}", o.target), None)
        }),
        f(
            "invitations: create",
            Role::Admin,
            false,
            201,
            Nothing,
            |o| {
                let body = json!({"email": o.email, "role": "viewer"});
                (M::POST, format!("{P}/invitations"), Some(body))
            },
        ),
        f(
            "invitations: list",
            Role::Admin,
            false,
            200,
            Nothing,
            |_| (M::GET, format!("{P}/invitations"), None),
        ),
        f(
            "invitations: revoke",
            Role::Admin,
            false,
            204,
            Invitation,
            |o| (M::DELETE, format!("{P}/invitations/{}", o.invitation), None),
        ),
        // Last: it ends the project.
        f("project: delete", Role::Owner, false, 204, Nothing, |_| {
            (M::DELETE, P.into(), None)
        }),
    ]
}

struct Fixture {
    app: TestApp,
    owner: String,
    target: String,
    secret_key: String,
    event: String,
    variant: String,
    counter: std::sync::atomic::AtomicUsize,
}

impl Fixture {
    async fn new(backend: Backend) -> Self {
        let app = TestApp::spawn(backend).await;
        let owner = acme_owner(&app).await;
        let keys = app
            .call(&owner, Method::POST, "/projects/acme/rotate-keys", 200)
            .await;
        let secret_key = keys["data"]["secret_key"].as_str().unwrap().to_owned();
        let target = join(&app, &owner, "target@acme.io", "viewer").await;
        let (event, variant) = event_with_variants(&app, &owner, "dana@example.com").await;
        Self {
            app,
            owner,
            target,
            secret_key,
            event,
            variant,
            counter: Default::default(),
        }
    }

    fn unique_email(&self) -> String {
        let n = self
            .counter
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("person{n}@example.com")
    }

    async fn objects(&self, fresh: Fresh) -> Objects {
        let app = &self.app;
        let mut objects = Objects {
            event: self.event.clone(),
            variant: self.variant.clone(),
            email: self.unique_email(),
            ..Objects::default()
        };
        match fresh {
            Fresh::Nothing => {}
            Fresh::Event => {
                let created = post_event(
                    app,
                    &self.owner,
                    &json!({"customer_email": self.unique_email(), "event_type": "cancellation"}),
                    201,
                )
                .await;
                objects.event = created["data"]["id"].as_str().unwrap().to_owned();
            }
            Fresh::Drafts => {
                (objects.event, objects.variant) =
                    event_with_variants(app, &self.owner, &self.unique_email()).await;
            }
            Fresh::Invitation => {
                let invitation = invite(app, &self.owner, &self.unique_email(), "viewer").await;
                objects.invitation = invitation["id"].as_str().unwrap().to_owned();
            }
            Fresh::Target => {
                let team = members(app, &self.owner).await;
                if !team.iter().any(|m| m["email"] == "target@acme.io") {
                    let invitation = invite(app, &self.owner, "target@acme.io", "viewer").await;
                    accept(app, &self.target, &token_of(&invitation), 200).await;
                }
                objects.target = id_of(&members(app, &self.owner).await, "target@acme.io");
            }
        }
        objects
    }
}

async fn every_role_against_every_route_family(backend: Backend) {
    let fx = Fixture::new(backend).await;
    let app = &fx.app;
    let admin = join(app, &fx.owner, "admin@acme.io", "admin").await;
    let member = join(app, &fx.owner, "member@acme.io", "member").await;
    let viewer = join(app, &fx.owner, "viewer@acme.io", "viewer").await;
    // The key first (rotating keys ends it), the owner last (it deletes the project).
    let callers: [(&str, Option<(Role, &str)>); 5] = [
        ("secret key", None),
        ("viewer", Some((Role::Viewer, viewer.as_str()))),
        ("member", Some((Role::Member, member.as_str()))),
        ("admin", Some((Role::Admin, admin.as_str()))),
        ("owner", Some((Role::Owner, fx.owner.as_str()))),
    ];
    let mut failures = Vec::new();
    let mut called = std::collections::HashSet::new();
    for (who, caller) in callers {
        for family in families() {
            let expected = match (caller, family.lowest) {
                (Some(_), None) => 401,
                (Some((role, _)), Some(lowest)) if role >= lowest => family.ok,
                (Some(_), Some(_)) => 403,
                (None, _) if !family.key => 401,
                (None, None) => family.ok,
                (None, Some(lowest)) if Role::Member >= lowest => family.ok,
                (None, Some(_)) => 403,
            };
            let objects = fx.objects(family.fresh).await;
            let (method, path, body) = (family.call)(&objects);
            called.insert((method.clone(), path.clone()));
            let mut req = app.req(method.clone(), &path);
            req = match caller {
                Some((_, token)) => req.bearer_auth(token),
                None => req.header("X-API-Key", &fx.secret_key),
            };
            if let Some(body) = body {
                req = req.json(&body);
            }
            let response = req.send().await.unwrap();
            let status = response.status().as_u16();
            if status != expected {
                let text = response.text().await.unwrap_or_default();
                failures.push(format!(
                    "{who} on {} ({method} {path}): {status}, expected {expected}: {text}",
                    family.name
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_every_project_operation_called(app, &called).await;
}

/// Every operation of the OpenAPI document on a project (`{slug}`) is one of the calls the
/// matrix made, so a new project route without a row here fails this test.
async fn assert_every_project_operation_called(
    app: &TestApp,
    called: &std::collections::HashSet<(Method, String)>,
) {
    let doc = app.expect(app.req(Method::GET, "/openapi.json"), 200).await;
    let matches = |template: &str, path: &str| {
        let path = path.split('?').next().unwrap_or_default();
        let (t, p): (Vec<&str>, Vec<&str>) =
            (template.split('/').collect(), path.split('/').collect());
        t.len() == p.len()
            && t.iter()
                .zip(&p)
                .all(|(t, p)| t == p || (t.starts_with('{') && !p.is_empty()))
    };
    let mut missing = Vec::new();
    for (template, operations) in doc["paths"].as_object().unwrap() {
        let Some(template) = template.strip_prefix("/api/v1") else {
            continue;
        };
        if !template.contains("{slug}") {
            continue;
        }
        for method in operations.as_object().unwrap().keys() {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            if !called
                .iter()
                .any(|(m, path)| *m == method && matches(template, path))
            {
                missing.push(format!("{method} {template}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "project operations without a row in the role matrix: {missing:?}"
    );
}
