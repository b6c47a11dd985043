// Outcome webhooks in the dashboard (decisions §19, §17) in a real browser: an endpoint created
// on its page (the signing secret shown once; a reload or "back" creates nothing), a test message sent to an HTTPS receiver on
// loopback (a certificate from a test CA made here with openssl, the CA trusted through
// CHURN_EXTRA_CA_FILE; private addresses allowed), the delivery in the log, then redelivered
// from it with the same message id. axe-core (no serious or critical violation), no CSP violation, and a screenshot on each
// page. The jobs run through the dev-mode server's job runner.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEADLINE_MS, checkPage, openBrowser, registerFounder, startServer, testCerts } from "./harness.mjs";

let server, base, browser, page, cspViolations, receiver, receiverUrl, certDir;
/** What the receiver got: each request's `webhook-id` header and body. */
const received = [];

before(async () => {
  certDir = mkdtempSync(join(tmpdir(), "churn-webhooks-cert-"));
  const { key, cert, ca } = testCerts(certDir);
  receiver = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    let body = "";
    req.on("data", (chunk) => { body += chunk; });
    req.on("end", () => {
      received.push({ id: req.headers["webhook-id"], body });
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("thanks");
    });
  });
  await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiverUrl = `https://localhost:${receiver.address().port}/hooks`;
  server = await startServer("webhooks", {
    CHURN_DEV_MODE: "true",
    CHURN_WEBHOOK_ALLOW_PRIVATE: "true",
    CHURN_EXTRA_CA_FILE: ca,
  });
  base = server.base;
  ({ browser, page, cspViolations } = await openBrowser());
  await registerFounder(page, base);
});

after(async () => {
  await browser?.close();
  server?.stop();
  receiver?.close();
  if (certDir) rmSync(certDir, { recursive: true, force: true });
});

const check = (name) => checkPage(page, "webhooks", name);

/** Runs the due jobs until the receiver has `count` requests. */
async function deliveredUntil(count) {
  const deadline = Date.now() + DEADLINE_MS;
  while (received.length < count) {
    const r = await fetch(`${base}/api/v1/dev/jobs/run`, { method: "POST" });
    assert.equal(r.status, 200);
    assert.ok(Date.now() < deadline, `the receiver got ${received.length} of ${count}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test("an endpoint is created, sent a test message, and the message redelivered from its log", async () => {
  await page.goto(`${base}/app/p/acme/settings`);
  await page.getByRole("link", { name: "Outcome webhooks" }).click();
  await page.getByRole("heading", { name: "Outcome webhooks", level: 1 }).waitFor();
  await page.getByText("No endpoints yet.").waitFor();
  await check("list-empty");

  await page.getByLabel("URL (https)").fill(receiverUrl);
  await page.getByLabel("Description").fill("Our CRM");
  await page.getByLabel("churn_event.recovered").check();
  await page.getByLabel("cancel_flow.saved").check();
  await page.getByRole("button", { name: "Add the endpoint" }).click();
  await page.getByRole("heading", { name: "Signing secret" }).waitFor();
  const secret = await page.locator("#shown-value").textContent();
  assert.match(secret, /^whsec_[A-Za-z0-9+/=]{24,}$/);
  await check("created");
  // The creation redirected to the endpoint's page: a reload or "back" repeats that GET,
  // shows no secret and creates nothing.
  assert.match(page.url(), /\/settings\/webhooks\/[0-9a-f-]{36}\?done=created$/);
  const endpointUrl = page.url().split("?")[0];
  await page.reload();
  await page.getByText("Its signing secret was shown once").waitFor();
  assert.equal(await page.getByText(secret).count(), 0);
  await check("reloaded");
  await page.getByRole("link", { name: "← Outcome webhooks" }).click();
  assert.equal(await page.getByRole("link", { name: receiverUrl }).count(), 1, "one endpoint");
  await page.goBack();
  await page.getByText("Its signing secret was shown once").waitFor();
  assert.equal(await page.getByText(secret).count(), 0);
  await page.goto(endpointUrl);

  await page.getByRole("button", { name: "Send a test message" }).click();
  await page.getByText("A test message is on its way").waitFor();
  await deliveredUntil(1);
  assert.equal(JSON.parse(received[0].body).type, "webhook.test");
  await page.reload();
  await page.locator(".badge", { hasText: "delivered" }).waitFor();
  await page.getByText("last answer HTTP 200").waitFor();
  // The secret is not shown again.
  assert.equal(await page.getByText(secret).count(), 0);
  await check("log");

  await page.getByRole("button", { name: "Redeliver" }).click();
  await page.getByText("The message is being delivered again.").waitFor();
  await deliveredUntil(2);
  assert.equal(received[1].id, received[0].id, "the same message id");
  assert.equal(received[1].body, received[0].body);
  await page.reload();
  await page.getByText("2 attempts").first().waitFor();
  await page.getByText("Attempts", { exact: true }).click();
  await page.getByRole("cell", { name: "thanks" }).first().waitFor();
  await check("redelivered");

  // The list shows the endpoint and its last delivery.
  await page.getByRole("link", { name: "← Outcome webhooks" }).click();
  await page.getByRole("link", { name: receiverUrl }).waitFor();
  await page.locator(".badge", { hasText: "delivered" }).waitFor();
  await check("list");
  await page.goto(`${endpointUrl}/delete`);
  await check("delete");
  assert.deepEqual(cspViolations, []);
});
