// The analytics page and the overview's tiles in a real browser (Debian's chromium, driven by
// playwright-core). Data is seeded through the API of a dev-mode server: churn events over
// three months on its test clock, some recovered. The heat map and its tables, axe-core, a
// tile's click putting its series in the main chart (htmx swaps the tiles and the chart; the
// address follows), and screenshots at desktop and phone width under <repo>/target/browser/.
//
// The server, chromium, axe-core and screenshots: harness.mjs.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { bearer, callApi, checkA11y as axe, openBrowser, screenshot, signIn, startServer } from "./harness.mjs";

let server, base, browser, page, cspViolations, token;
const checkA11y = (name) => axe(page, name);
const shot = (name) => screenshot(page, `dashboard-${name}`);

const call = (method, path, body) => callApi(base, method, path, body, bearer(token));

/** Events in each of the last three months, on the test clock; a third of them recovered.
 * Registered first at the clock's time, so the session covers the months set back to. */
async function seed() {
  const { data: clock } = await call("GET", "/dev/clock");
  token = (await call("POST", "/auth/register", { name: "Ada Founder", email: "ada@acme.example", password: "correct horse" })).data.token;
  await call("POST", "/projects", { name: "Acme", support_email: "support@acme.example" });
  await call("POST", "/dev/clock", { set: new Date(Date.parse(clock.now) - 62 * 86_400_000).toISOString() });
  let n = 0;
  for (const month of [0, 1, 2]) {
    for (let i = 0; i < 3 + month * 2; i++) {
      n += 1;
      const { data } = await call("POST", "/projects/acme/churn-events", {
        customer_email: `c${n}@shop.example`, event_type: "cancellation", mrr: 1500 + 700 * i, currency: "usd",
      });
      if (n % 3 === 0) await call("POST", `/projects/acme/churn-events/${data.id}/recovered`);
    }
    if (month < 2) await call("POST", "/dev/clock", { advance_seconds: 31 * 86_400 });
  }
}

before(async () => {
  server = await startServer("analytics", { CHURN_DEV_MODE: "true" });
  base = server.base;
  await seed();
  ({ browser, page, cspViolations } = await openBrowser());
  await signIn(page, base, "Analytics");
});

after(async () => {
  await browser?.close();
  server?.stop();
});

test("analytics: the cohort heat map, its numbers, the forecast and uplift", async () => {
  await page.getByRole("link", { name: "Analytics" }).click();
  await page.getByRole("heading", { name: /^Cohorts/ }).waitFor();
  assert.equal(await page.locator("svg.heatmap g rect").count(), 12 * 4, "twelve months × four buckets");
  assert.ok(await page.locator("svg.heatmap g.heat-4").count() > 0, "a dark cell");
  await page.locator("section", { hasText: "Cohorts" }).getByText("The numbers").click();
  assert.equal(await page.locator("table.cohorts tbody tr").count(), 12);
  await page.getByRole("heading", { name: "Forecast" }).waitFor();
  assert.ok(await page.locator("svg.chart polyline.churned").count() > 0, "the churned line");
  assert.equal(await page.locator("table.periods-table tbody tr").count(), 4);
  await checkA11y("analytics");
  await shot("analytics");
  await page.getByRole("link", { name: "6 months" }).first().click();
  await page.waitForURL(/months=6/);
  assert.equal(await page.locator("table.cohorts tbody tr").count(), 6);
  await page.setViewportSize({ width: 390, height: 844 });
  await shot("analytics-phone");
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `no sideways scrolling at 390 px (page is ${width} px wide)`);
  await page.setViewportSize({ width: 1280, height: 860 });
});

test("overview: sparklines, and a tile's click puts its series in the chart", async () => {
  await page.goto(`${base}/app/p/acme`);
  await page.getByRole("heading", { name: "Churned and recovered MRR by month" }).waitFor();
  assert.equal(await page.locator("a.tile svg.spark").count(), 5);
  await checkA11y("overview");
  await shot("overview-tiles");
  const before = await page.evaluate(() => window.__marker = "kept");
  assert.equal(before, "kept");
  await page.getByRole("link", { name: /^Open churn events/ }).click();
  await page.getByRole("heading", { name: "Churn events created each month and still open" }).waitFor();
  await page.waitForURL(/metric=open_events/);
  assert.equal(await page.evaluate(() => window.__marker), "kept", "htmx swapped the chart, no page load");
  assert.equal(await page.getByRole("link", { name: /^Open churn events/ }).getAttribute("aria-current"), "true");
  assert.ok(await page.locator("svg.chart polyline.metric").count() > 0, "the series' line");
  await checkA11y("overview-metric");
  await page.setViewportSize({ width: 390, height: 844 });
  await shot("overview-phone");
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `no sideways scrolling at 390 px (page is ${width} px wide)`);
  await page.setViewportSize({ width: 1280, height: 860 });
  assert.deepEqual(cspViolations, [], "no page trips its Content-Security-Policy");
});
