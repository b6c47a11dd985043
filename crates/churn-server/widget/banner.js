/*
 * churn in-app banner. Plain modern JavaScript, no dependencies; served by churn at
 * /widget/v1/banner.js.
 *
 *   <script src="https://churn.example.com/widget/v1/banner.js"></script>
 *   ChurnBanner.show({ publicKey: "pub_…", customerEmail: "dana@example.com",
 *                      customerHash: "<made by your server>" })
 *     .then((shown) => { … });   // true when a banner is shown
 *
 * When a payment of the customer is failing, a banner at the top of the page links to its
 * card-update page; otherwise nothing. customerHash is made as for the cancel flow.
 *
 * The banner is a labelled region in a shadow root (the page's styles do not reach it). Its
 * close button, or Escape while the focus is inside it, dismisses it for the browser session
 * (sessionStorage); the focus is not taken.
 */
(() => {
  "use strict";

  const SCRIPT_URL = document.currentScript && document.currentScript.src;
  // The service's API sits beside the script: /widget/v1/banner.js → /api/v1.
  const DEFAULT_API_BASE = SCRIPT_URL ? new URL("../../api/v1", SCRIPT_URL).href : "/api/v1";
  const DISMISSED = "churn-banner-dismissed";

  let host = null;

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
    if (text) node.textContent = text;
    return node;
  }

  function dismissed() {
    try {
      return sessionStorage.getItem(DISMISSED) === "1";
    } catch (e) {
      return false;
    }
  }

  function dismiss() {
    try {
      sessionStorage.setItem(DISMISSED, "1");
    } catch (e) {
      // Storage refused (private mode): dismissed for this page only.
    }
    if (host) host.remove();
    host = null;
  }

  const STYLE = `
    :host { all: initial; }
    .banner { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 16px;
      padding: 12px 16px; background: #fff4e5; color: #3d2600; border-bottom: 1px solid #f0c36d;
      font: 15px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; }
    p { margin: 0; flex: 1 1 16rem; }
    a { color: #fff; background: #8a4b00; padding: 8px 14px; border-radius: 6px;
      text-decoration: none; font-weight: 600; white-space: nowrap; }
    button { font: inherit; background: none; border: 1px solid #8a4b00; color: #3d2600;
      border-radius: 6px; padding: 6px 10px; cursor: pointer; }
    a:focus-visible, button:focus-visible { outline: 3px solid #1a56db; outline-offset: 2px; }`;

  function render(updateUrl) {
    host = el("div", { "data-churn-banner": "" });
    const root = host.attachShadow({ mode: "open" });
    const style = el("style");
    style.textContent = STYLE;
    const region = el("div", { class: "banner", role: "region", "aria-label": "Payment problem" });
    const text = el("p", {}, "Your last payment did not go through. Please update your payment method to keep your subscription.");
    const link = el("a", { href: updateUrl }, "Update payment method");
    const close = el("button", { type: "button", "aria-label": "Dismiss this message" }, "Dismiss");
    close.addEventListener("click", dismiss);
    region.addEventListener("keydown", (event) => {
      if (event.key === "Escape") dismiss();
    });
    region.append(text, link, close);
    root.append(style, region);
    document.body.prepend(host);
  }

  /** Shows the banner when the customer has a failing payment; resolves whether it did. */
  async function show(options) {
    const o = options || {};
    if (!o.publicKey || !o.customerEmail || !o.customerHash) {
      throw new TypeError("ChurnBanner.show needs publicKey, customerEmail and customerHash");
    }
    if (host || dismissed()) return Boolean(host);
    const base = String(o.apiBase || DEFAULT_API_BASE).replace(/\/+$/, "");
    const who = new URLSearchParams({ customer_email: o.customerEmail, customer_hash: o.customerHash });
    const response = await fetch(`${base}/customer-status/${encodeURIComponent(o.publicKey)}?${who}`);
    const body = await response.json().catch(() => null);
    if (!response.ok) {
      throw new Error((body && body.error && body.error.message) || `HTTP ${response.status}`);
    }
    const status = body.data;
    if (!status.payment_failing || !status.update_url || host) return Boolean(host);
    render(status.update_url);
    return true;
  }

  window.ChurnBanner = Object.freeze({ show });
})();
