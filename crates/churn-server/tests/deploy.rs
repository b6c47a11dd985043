//! The shipping files — `Dockerfile` and `deploy/` — hold to the settings churn really has and
//! to the shape `deploy/README.md` describes. No container engine or systemd runs here, so
//! each file is parsed and its settings are loaded through `Config::load`, as the server
//! would load them.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use churn_core::config::Config;
use ipnet::IpNet;
use serde_norway::Value;

type Env = BTreeMap<String, String>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Loads `env` as the server would, failing with the setting's error.
fn load(env: &Env, what: &str) -> Config {
    let overrides: serde_json::Map<String, serde_json::Value> = env
        .iter()
        .map(|(var, value)| {
            let key = var.strip_prefix("CHURN_").expect("a CHURN_ variable");
            (key.to_lowercase(), serde_json::Value::String(value.clone()))
        })
        .collect();
    Config::load(None, overrides).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn churn_vars(env: &Env) -> Env {
    env.iter()
        .filter(|(var, _)| var.starts_with("CHURN_"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn trusted(config: &Config, ip: IpAddr) -> bool {
    config.trusted_proxies.iter().any(|net| net.contains(&ip))
}

// --- Dockerfile ------------------------------------------------------------------------------

/// The instructions of the Dockerfile's last stage (the image), continuation lines joined.
fn image_instructions() -> Vec<(String, String)> {
    let text = read("Dockerfile");
    let mut joined = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(part) => current.push_str(part),
            None => {
                current.push_str(line);
                joined.push(std::mem::take(&mut current));
            }
        }
    }
    let stages = joined.iter().filter(|i| i.starts_with("FROM ")).count();
    assert!(
        stages >= 2,
        "a multi-stage build (builder, then a slim image)"
    );
    let last = joined.iter().rposition(|i| i.starts_with("FROM ")).unwrap();
    joined[last..]
        .iter()
        .filter(|i| !i.is_empty())
        .map(|i| {
            let (op, args) = i.split_once(char::is_whitespace).unwrap_or((i, ""));
            (op.to_uppercase(), args.trim().to_owned())
        })
        .collect()
}

fn image_env() -> Env {
    image_instructions()
        .iter()
        .filter(|(op, _)| op == "ENV")
        .flat_map(|(_, args)| {
            args.split_whitespace()
                .map(|pair| {
                    let (k, v) = pair.split_once('=').expect("ENV key=value");
                    (k.to_owned(), v.to_owned())
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn image_config() -> Config {
    load(&churn_vars(&image_env()), "Dockerfile ENV")
}

#[test]
fn the_image_runs_unprivileged_with_its_data_in_the_volume() {
    let instructions = image_instructions();
    let one = |op: &str| {
        let found: Vec<_> = instructions.iter().filter(|(o, _)| o == op).collect();
        assert_eq!(found.len(), 1, "one {op} in the image stage");
        found[0].1.clone()
    };

    let user = one("USER");
    let uid = user.split(':').next().unwrap();
    assert!(
        uid.parse::<u32>().is_ok_and(|uid| uid != 0),
        "USER is a numeric uid other than root's: {user}"
    );
    assert_eq!(one("VOLUME"), "/data");

    let config = image_config();
    assert_eq!(config.data_dir, Path::new("/data"));
    assert_eq!(
        config.database_url.expose(),
        "sqlite:///data/churn.db",
        "the SQLite file lives in the volume"
    );
    assert!(!config.bind.ip().is_loopback(), "reachable from outside");
    let port = config.bind.port();
    assert_eq!(one("EXPOSE"), port.to_string());

    let health = one("HEALTHCHECK");
    assert!(
        health.contains(&format!("http://127.0.0.1:{port}/health")),
        "the health check asks the bound port's /health (exempt from the HTTPS rule): {health}"
    );
    assert!(one("ENTRYPOINT").contains("churn-server"));
}

// --- compose.yaml ------------------------------------------------------------------------------

fn compose() -> Value {
    serde_norway::from_str(&read("deploy/compose.yaml")).expect("compose.yaml is YAML")
}

/// `env.example`, with a stand-in for each value the operator must fill in.
fn dot_env() -> Env {
    read("deploy/env.example")
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && l.contains('='))
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap();
            let v = v.trim_matches('"');
            let v = if v.is_empty() { "filled-in" } else { v };
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

/// Compose's `${VAR}`, `${VAR:?message}` and `${VAR:-default}` against `vars`.
fn interpolate(value: &str, vars: &Env) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').expect("closed ${") + start;
        let expr = &rest[start + 2..end];
        let (name, default) = match expr.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (expr.split(":?").next().unwrap(), None),
        };
        match (vars.get(name), default) {
            (Some(v), _) => out.push_str(v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => panic!("{name} is required by compose.yaml but not in env.example"),
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

fn service_env(service: &Value) -> Env {
    service["environment"]
        .as_mapping()
        .expect("environment as a mapping")
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s.clone(),
                other => serde_norway::to_string(other).unwrap().trim().to_owned(),
            };
            (k.as_str().unwrap().to_owned(), v)
        })
        .collect()
}

/// The services built from this repository: the churn processes.
fn churn_services(compose: &Value) -> Vec<(String, &Value)> {
    compose["services"]
        .as_mapping()
        .unwrap()
        .iter()
        .filter(|(_, s)| !s["build"].is_null())
        .map(|(name, s)| (name.as_str().unwrap().to_owned(), s))
        .collect()
}

/// A churn process's settings: the image's, then the service's (as docker applies them).
fn replica_config(service: &Value) -> Config {
    let vars = dot_env();
    let mut env = churn_vars(&image_env());
    for (k, v) in service_env(service) {
        env.insert(k, interpolate(&v, &vars));
    }
    load(&env, "a churn service of compose.yaml")
}

#[test]
fn compose_runs_two_churn_processes_on_one_postgres() {
    let compose = compose();
    let churn = churn_services(&compose);
    let names: Vec<_> = churn.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["churn-1", "churn-2"]);

    let postgres = &compose["services"]["postgres"];
    assert!(postgres["image"].as_str().unwrap().starts_with("postgres:"));
    let test = postgres["healthcheck"]["test"].as_sequence().unwrap();
    assert!(test.iter().any(|t| t.as_str() == Some("pg_isready")));
    assert!(
        postgres["volumes"][0]
            .as_str()
            .unwrap()
            .ends_with(":/var/lib/postgresql/data"),
        "the database lives in a named volume"
    );

    for (name, service) in &churn {
        assert_eq!(
            service["depends_on"]["postgres"]["condition"].as_str(),
            Some("service_healthy"),
            "{name} starts once PostgreSQL answers"
        );
        let config = replica_config(service);
        let url = config.database_url.expose();
        assert!(config.database_url.is_postgres(), "{name}: {url}");
        let host = url.rsplit_once('@').unwrap().1.split([':', '/']).next();
        assert_eq!(host, Some("postgres"), "{name} uses the postgres service");
        assert!(config.encryption_key.is_some(), "{name} is given the key");
        assert!(config.smtp_url.is_some(), "{name}: two processes need SMTP");
        assert!(config.public_url().starts_with("https://"));
    }

    // Every setting, secrets included, is the same on both.
    let envs: Vec<_> = churn.iter().map(|(_, s)| service_env(s)).collect();
    assert_eq!(envs[0], envs[1]);
    assert!(envs[0].contains_key("CHURN_ENCRYPTION_KEY"));
}

#[test]
fn compose_trusts_caddy_alone_and_caddy_balances_both_processes() {
    let compose = compose();
    let caddy_ip: IpAddr = compose["services"]["caddy"]["networks"]["edge"]["ipv4_address"]
        .as_str()
        .expect("Caddy has a fixed address")
        .parse()
        .unwrap();
    let subnet: IpNet = compose["networks"]["edge"]["ipam"]["config"][0]["subnet"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(subnet.contains(&caddy_ip));

    let churn = churn_services(&compose);
    for (name, service) in &churn {
        let config = replica_config(service);
        assert!(trusted(&config, caddy_ip), "{name} trusts Caddy");
        assert!(
            config
                .trusted_proxies
                .iter()
                .all(|net| net.prefix_len() == net.max_prefix_len()),
            "{name} trusts single addresses only, not the network its peers share"
        );
        assert!(!config.allow_http(), "{name}: plain HTTP only from Caddy");
        let networks = service["networks"].as_sequence().unwrap();
        assert!(networks.iter().any(|n| n.as_str() == Some("edge")));
        assert!(networks.iter().any(|n| n.as_str() == Some("db")));
    }
    assert_eq!(compose["networks"]["db"]["internal"].as_bool(), Some(true));
    let postgres_networks = compose["services"]["postgres"]["networks"]
        .as_sequence()
        .unwrap();
    assert_eq!(postgres_networks.len(), 1);
    assert_eq!(postgres_networks[0].as_str(), Some("db"));

    // The Caddyfile's upstreams are exactly the churn services on the image's port.
    let caddyfile = read("deploy/Caddyfile");
    let upstreams: Vec<_> = caddyfile
        .lines()
        .find_map(|l| l.trim().strip_prefix("reverse_proxy "))
        .expect("a reverse_proxy line")
        .trim_end_matches('{')
        .split_whitespace()
        .collect();
    let port = image_config().bind.port();
    let expected: Vec<_> = churn.iter().map(|(n, _)| format!("{n}:{port}")).collect();
    assert_eq!(upstreams, expected);
    assert!(caddyfile.contains("health_uri /ready"));
}

// --- churn.service and nginx.conf --------------------------------------------------------------

/// `[Service]` of the unit: each key with its values in order.
fn unit_service() -> BTreeMap<String, Vec<String>> {
    let mut section = String::new();
    let mut service: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in read("deploy/churn.service").lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
        } else if section == "Service" {
            let (key, value) = line.split_once('=').expect("key=value");
            service
                .entry(key.to_owned())
                .or_default()
                .push(value.to_owned());
        }
    }
    service
}

fn unit_config(service: &BTreeMap<String, Vec<String>>) -> Config {
    let env = service["Environment"]
        .iter()
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap();
            (k.to_owned(), v.to_owned())
        })
        .collect();
    load(&env, "churn.service Environment=")
}

#[test]
fn the_unit_runs_as_its_own_user_in_its_data_folder() {
    let service = unit_service();
    let one = |key: &str| -> &str {
        let values = service.get(key).unwrap_or_else(|| panic!("{key}= is set"));
        assert_eq!(values.len(), 1, "{key}= once");
        &values[0]
    };
    assert_eq!(one("User"), "churn");
    assert_eq!(one("ExecStart"), "/usr/local/bin/churn-server");
    assert_eq!(one("NoNewPrivileges"), "yes");
    assert_eq!(one("ProtectSystem"), "strict");

    let config = unit_config(&service);
    let data_dir = config.data_dir.to_str().unwrap();
    assert_eq!(one("WorkingDirectory"), data_dir);
    assert_eq!(one("ReadWritePaths"), data_dir, "the only writable folder");
    assert_eq!(format!("/var/lib/{}", one("StateDirectory")), data_dir);
    let db = config
        .database_url
        .expose()
        .strip_prefix("sqlite://")
        .unwrap();
    assert!(
        Path::new(db).starts_with(data_dir),
        "the database lives in the data folder: {db}"
    );
    assert!(config.bind.ip().is_loopback(), "only the proxy reaches it");
    assert_eq!(
        config.registration(),
        churn_core::config::Registration::InviteOnly,
        "a loopback bind must not open registration to the public behind the proxy"
    );
}

#[test]
fn nginx_forwards_the_scheme_from_an_address_the_unit_trusts() {
    let nginx = read("deploy/nginx.conf");
    let config = unit_config(&unit_service());
    let upstream = nginx
        .lines()
        .find_map(|l| l.trim().strip_prefix("server "))
        .expect("an upstream server")
        .trim_end_matches(';');
    assert_eq!(upstream, config.bind.to_string());
    // nginx connects from the address it connects to: loopback.
    assert!(trusted(&config, config.bind.ip()));
    assert!(nginx.contains("proxy_set_header X-Forwarded-Proto $scheme;"));
    assert!(nginx.contains("proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;"));
}

// --- every file ----------------------------------------------------------------------------------

#[test]
fn every_churn_variable_named_in_the_shipping_files_is_a_setting() {
    let mut files = vec![PathBuf::from("Dockerfile")];
    for entry in std::fs::read_dir(root().join("deploy")).unwrap() {
        files.push(Path::new("deploy").join(entry.unwrap().file_name()));
    }
    let mut named = 0;
    for file in &files {
        let text = read(file.to_str().unwrap());
        for (at, _) in text.match_indices("CHURN_") {
            let var: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if var == "CHURN_" {
                continue; // `CHURN_*`, the family
            }
            named += 1;
            assert!(
                Config::is_setting(&var),
                "{}: {var} is not a setting",
                file.display()
            );
        }
    }
    assert!(named > 20, "the scan found the variables ({named})");
    assert!(!Config::is_setting("CHURN_DOMAIN") && !Config::is_setting("BIND"));
}
