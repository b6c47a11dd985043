// What the dashboard's browser tests share: a churn server on a fresh SQLite file, Debian's
// chromium with a page that records Content-Security-Policy violations, axe-core, and
// screenshots under <repo>/target/browser/.
//
// The server: CHURN_SERVER_BIN, else $CARGO_TARGET_DIR/debug/churn-server, else
// <repo>/target/debug/churn-server. Chromium: CHROMIUM_BIN, else /usr/bin/chromium.

import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");
const TARGET = process.env.CARGO_TARGET_DIR || join(REPO, "target");
const SERVER_BIN = process.env.CHURN_SERVER_BIN || join(TARGET, "debug", "churn-server");
const SHOTS = join(REPO, "target", "browser");
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
export const DEADLINE_MS = 15_000;

/** A server on a fresh SQLite file with `env` added; answers `{ base, stop }` once it listens. */
export function startServer(name, env = {}) {
  const work = mkdtempSync(join(tmpdir(), `churn-${name}-`));
  const server = spawn(SERVER_BIN, [], {
    env: {
      ...process.env,
      CHURN_BIND: "127.0.0.1:0",
      CHURN_DATA_DIR: join(work, "data"),
      CHURN_DATABASE_URL: `sqlite://${join(work, "churn.db")}`,
      CHURN_LOG_FORMAT: "json",
      CHURN_RATE_LIMITS: "off",
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const stop = () => {
    server.kill();
    rmSync(work, { recursive: true, force: true });
  };
  let log = "";
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${log}`)), DEADLINE_MS);
    server.stderr.on("data", (chunk) => {
      log += chunk;
      const match = log.match(/"address":"([^"]+)"/);
      if (match) {
        clearTimeout(timer);
        resolvePromise({ base: `http://${match[1]}`, stop });
      }
    });
    server.on("exit", (code) => reject(new Error(`server exited (${code}):\n${log}`)));
  });
}

/** A call to the API at `base` that must succeed; its JSON answer. A string body goes as it
 * is, any other as JSON; an empty `authorization` header is left out. */
export async function callApi(base, method, path, body, headers = {}) {
  const all = { "content-type": "application/json", ...headers };
  if (all.authorization === "") delete all.authorization;
  const response = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: all,
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** The `authorization` header of a session's token; none without one. */
export const bearer = (token) => (token ? { authorization: `Bearer ${token}` } : {});

/** Chromium and a page of `viewport` (desktop-sized by default); `cspViolations` collects
 * what the page's CSP refused. */
export async function openBrowser(viewport = { width: 1280, height: 860 }) {
  mkdirSync(SHOTS, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_BIN || "/usr/bin/chromium",
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const page = await browser.newPage({ viewport });
  page.setDefaultTimeout(DEADLINE_MS);
  const cspViolations = [];
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  return { browser, page, cspViolations };
}

/** The id or text (else the tag) of what has the focus inside the cancel-flow widget's shadow
 * root; null outside it. */
export const widgetFocus = (page) =>
  page.evaluate(() => {
    const host = document.querySelector("[data-churn-cancel-flow]");
    if (!host || document.activeElement !== host) return null;
    const el = host.shadowRoot.activeElement;
    return el ? el.id || el.textContent.trim() || el.tagName : null;
  });

/** axe-core in the page (evaluated through the DevTools protocol, which the page's CSP does
 * not govern): no serious or critical violation. */
export async function checkA11y(page, name) {
  await page.evaluate(AXE);
  const result = await page.evaluate(() => window.axe.run(document));
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(
    bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`),
    [],
    `axe on ${name}`,
  );
}

/** Once the page has loaded: axe (as `checkA11y`) and a screenshot `<prefix>-<name>`. */
export async function checkPage(page, prefix, name) {
  await page.waitForLoadState("load");
  await checkA11y(page, name);
  await screenshot(page, `${prefix}-${name}`);
}

/** A full-page screenshot, `<repo>/target/browser/<file>.png`. */
export async function screenshot(page, file) {
  await page.screenshot({ path: join(SHOTS, `${file}.png`), fullPage: true });
}

/** Signs Ada Founder in through the sign-in page; waits for the link to `landing`. */
export async function signIn(page, base, landing) {
  await page.goto(`${base}/app/sign-in`);
  await page.getByLabel("Email").fill("ada@acme.example");
  await page.getByLabel("Password").fill("correct horse");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("link", { name: landing }).waitFor();
}

/** Registers Ada Founder of Acme through the registration page, which opens Acme's checklist. */
export async function registerFounder(page, base) {
  await page.goto(`${base}/app/register`);
  await submitRegistration(page);
}

/** Fills in and sends the registration page `page` shows, for Ada Founder of Acme; waits for
 * Acme's checklist. */
export async function submitRegistration(page) {
  await page.getByLabel("Your name").fill("Ada Founder");
  await page.getByLabel("Email").fill("ada@acme.example");
  await page.getByLabel(/^Password/).fill("correct horse");
  await page.getByLabel("Your product's name").fill("Acme");
  await page.getByRole("button", { name: "Create the account" }).click();
  await page.getByRole("heading", { name: "Set up Acme" }).waitFor();
}

/** A test CA and a certificate for localhost it signed (a CA certificate itself is refused
 * as a server's), made with openssl in `dir`: for a loopback HTTPS server churn calls, the CA
 * given to churn as CHURN_EXTRA_CA_FILE. */
export function testCerts(dir) {
  const f = (name) => join(dir, name);
  const run = (args) => execFileSync("openssl", args, { stdio: "ignore" });
  run(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=churn test CA",
    "-keyout", f("ca.key"), "-out", f("ca.pem")]);
  run(["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", f("key.pem"), "-out", f("leaf.csr")]);
  writeFileSync(f("leaf.ext"), "basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n");
  run(["x509", "-req", "-in", f("leaf.csr"), "-CA", f("ca.pem"), "-CAkey", f("ca.key"), "-CAcreateserial",
    "-days", "1", "-extfile", f("leaf.ext"), "-out", f("cert.pem")]);
  return { key: f("key.pem"), cert: f("cert.pem"), ca: f("ca.pem") };
}
