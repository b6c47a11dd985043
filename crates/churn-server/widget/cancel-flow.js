/*
 * churn cancel-flow widget. Plain modern JavaScript, no dependencies; served by churn at
 * /widget/v1/cancel-flow.js.
 *
 *   <script src="https://churn.example.com/widget/v1/cancel-flow.js"></script>
 *   ChurnCancelFlow.open({ publicKey: "pub_…", customerEmail: "dana@example.com",
 *                          customerHash: "<made by your server>" })
 *     .then((result) => { … });   // {outcome: "cancelled" | "saved" | "closed", churnEventId?, offer?}
 *
 * A verified open is a session (its id comes with the configuration): the reason chosen
 * before an offer is shown, and the outcome, are reported in it, so churn can draw the funnel.
 *
 * customerHash is the hex HMAC-SHA256 of the customer's email (and "|" + subscriptionId when
 * given) under the project's identity secret: your server makes it, so nobody holding the
 * public key can act for your customers.
 *
 * What the page knows of the customer routes it to the project's flow for its segment:
 * planName, mrr (cents), tenureDays, billingInterval ("month" | "year") and properties (an
 * object of strings) go to the service with the configuration's request and the answer.
 *
 * The dialog lives in a shadow root (the page's styles do not reach it, its styles do not
 * leak), takes the focus when it opens and keeps it inside (Tab and Shift+Tab cycle), closes
 * on Escape and gives the focus back. Texts and colours come from the project's flow.
 *
 * A flow in compliance mode (click-to-cancel) shows a "Cancel now" button on every step,
 * which records the cancellation at once.
 *
 * ChurnCancelFlow.preview(flow, reason?) shows a flow handed to it instead, for churn's
 * dashboard: nothing is fetched or stored, the focus is left where it is, and the next call
 * replaces the dialog; with `reason` it opens on that reason's offer.
 */
(() => {
  "use strict";

  const SCRIPT_URL = document.currentScript && document.currentScript.src;
  // The service's API sits beside the script: /widget/v1/cancel-flow.js → /api/v1.
  const DEFAULT_API_BASE = SCRIPT_URL ? new URL("../../api/v1", SCRIPT_URL).href : "/api/v1";
  const HEX = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i;
  const FOCUSABLE =
    'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

  let current = null;
  // Closes the dialog a preview shows.
  let previewed = null;

  /** Builds an element: h("button", {type: "button", onclick}, "text", child…). */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
      else if (name === "text") el.textContent = value;
      else el.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child !== null && child !== undefined) el.append(child);
    }
    return el;
  }

  /** Fills {percent}, {months}, {max_months}, {days} and {plan} from the offer. */
  function fill(text, offer) {
    return text.replace(/\{(\w+)\}/g, (whole, name) =>
      offer[name] === undefined ? whole : String(offer[name]),
    );
  }

  function color(value, fallback) {
    return HEX.test(value || "") ? value : fallback;
  }

  function styles(colors) {
    const primary = color(colors.primary, "#4f46e5");
    const background = color(colors.background, "#ffffff");
    const text = color(colors.text, "#111827");
    return `
      :host { all: initial; }
      .overlay { position: fixed; inset: 0; z-index: 2147483647; display: flex;
        align-items: center; justify-content: center; padding: 12px; box-sizing: border-box;
        background: rgba(17, 24, 39, 0.55);
        font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
      .dialog { box-sizing: border-box; width: min(480px, 100%); max-height: calc(100vh - 24px);
        overflow-y: auto; background: ${background}; color: ${text}; border-radius: 12px;
        padding: 24px; box-shadow: 0 20px 50px rgba(0, 0, 0, 0.3); }
      h2 { margin: 0 0 12px; font-size: 1.25rem; line-height: 1.3; }
      p { margin: 0 0 16px; }
      fieldset { border: 0; margin: 0 0 16px; padding: 0; }
      legend { padding: 0; margin-bottom: 8px; font-weight: 600; }
      .reason { display: flex; gap: 10px; align-items: flex-start; padding: 8px 10px;
        border: 1px solid rgba(127, 127, 127, 0.35); border-radius: 8px; margin-bottom: 6px;
        cursor: pointer; }
      .reason input { margin: 4px 0 0; accent-color: ${primary}; flex: none; }
      label.field { display: block; font-weight: 600; margin-bottom: 6px; }
      textarea, select { box-sizing: border-box; width: 100%; font: inherit; color: inherit;
        background: transparent; border: 1px solid rgba(127, 127, 127, 0.6); border-radius: 8px;
        padding: 8px; margin-bottom: 16px; }
      textarea { min-height: 72px; resize: vertical; }
      .actions { display: flex; flex-wrap: wrap; gap: 8px; justify-content: flex-end; }
      button { font: inherit; font-weight: 600; border-radius: 8px; padding: 10px 16px;
        cursor: pointer; border: 2px solid ${primary}; min-height: 44px; }
      button.primary { background: ${primary}; color: #fff; }
      button.secondary { background: transparent; color: ${text}; border-color: rgba(127, 127, 127, 0.6); }
      button[disabled] { opacity: 0.5; cursor: not-allowed; }
      :focus { outline: none; }
      :focus-visible, .reason:focus-within { outline: 3px solid ${primary}; outline-offset: 2px; }
      a { color: ${primary}; font-weight: 600; word-break: break-all; }
      .error { color: #b91c1c; font-weight: 600; }
      .error:empty { display: none; }
      @media (max-width: 420px) {
        .overlay { padding: 0; align-items: flex-end; }
        .dialog { border-radius: 12px 12px 0 0; padding: 18px; max-height: 100vh; }
        .actions button { flex: 1 1 100%; }
      }
      @media (prefers-reduced-motion: no-preference) {
        .dialog { animation: rise 160ms ease-out; }
        @keyframes rise { from { transform: translateY(12px); opacity: 0; } }
      }`;
  }

  async function request(url, options) {
    const response = await fetch(url, options);
    const body = await response.json().catch(() => null);
    if (!response.ok) {
      const message = body && body.error && body.error.message;
      throw new Error(message || `HTTP ${response.status}`);
    }
    return body.data;
  }

  /** Opens the flow; resolves once the dialog closes. */
  function open(options) {
    if (current) return current;
    const o = options || {};
    if (!o.publicKey || !o.customerEmail || !o.customerHash) {
      return Promise.reject(
        new TypeError("ChurnCancelFlow.open needs publicKey, customerEmail and customerHash"),
      );
    }
    const base = String(o.apiBase || DEFAULT_API_BASE).replace(/\/+$/, "");
    const key = encodeURIComponent(o.publicKey);
    const who = new URLSearchParams({ customer_email: o.customerEmail, customer_hash: o.customerHash });
    if (o.subscriptionId) who.set("subscription_id", o.subscriptionId);
    const facts = factsOf(o);
    for (const [name, value] of Object.entries(facts)) {
      who.set(name, typeof value === "object" ? JSON.stringify(value) : String(value));
    }
    const configUrl = `${base}/cancel-flow/config/${key}?${who}`;
    let session = null;
    const post = (path, body) =>
      request(`${base}${path}?public_key=${key}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const send = (body) => post("/cancel-flow/reasons", session ? { ...body, session_id: session } : body);
    // Only the funnel depends on it: the customer never waits on it nor sees it fail.
    const step = (body) => {
      if (session) post(`/cancel-flow/sessions/${encodeURIComponent(session)}/reason`, body).catch(() => {});
    };
    current = request(configUrl)
      .then((flow) => {
        session = flow.session_id || null;
        return show(flow, o, send, step);
      })
      .finally(() => {
        current = null;
      });
    return current;
  }

  /** The customer's facts the flow is routed by, under the service's names. */
  function factsOf(o) {
    const facts = {};
    if (o.planName) facts.plan_name = o.planName;
    if (Number.isInteger(o.mrr)) facts.mrr = o.mrr;
    if (Number.isInteger(o.tenureDays)) facts.tenure_days = o.tenureDays;
    if (o.billingInterval) facts.billing_interval = o.billingInterval;
    if (o.properties && typeof o.properties === "object") facts.properties = o.properties;
    return facts;
  }

  /** Shows `flow` without the service: answers are acknowledged, never sent. */
  function preview(flow, reason) {
    if (previewed) previewed();
    const send = (body) => Promise.resolve({ status: body.offer_accepted ? "recovered" : "new" });
    show(flow, { preview: true, reason }, send, () => {});
  }

  function show(flow, o, send, step) {
    return new Promise((resolve) => {
      const copy = flow.copy;
      const opener = document.activeElement;
      const host = h("div", { "data-churn-cancel-flow": "" });
      const root = host.attachShadow({ mode: "open" });
      const titleId = "churn-cf-title";
      const dialog = h("div", {
        class: "dialog",
        role: "dialog",
        "aria-modal": "true",
        "aria-labelledby": titleId,
        lang: flow.language,
      });
      root.append(h("style", { text: styles(flow.colors || {}) }), h("div", { class: "overlay" }, dialog));
      document.body.append(host);

      let result = { outcome: "closed" };
      let busy = false;

      function close() {
        if (previewed === close) previewed = null;
        host.remove();
        document.removeEventListener("keydown", onPageKey, true);
        if (!o.preview && opener && typeof opener.focus === "function") opener.focus();
        resolve(result);
      }

      function focusables() {
        return Array.from(dialog.querySelectorAll(FOCUSABLE));
      }

      function onKey(event) {
        if (event.key === "Escape") {
          event.preventDefault();
          event.stopPropagation();
          if (!busy) close();
        } else if (event.key === "Tab") {
          const items = focusables();
          if (items.length === 0) return;
          const first = items[0];
          const last = items[items.length - 1];
          const active = root.activeElement;
          // Shift+Tab leaves a radio group from whichever radio holds the focus.
          const inFirstGroup =
            active && first.type === "radio" && active.type === "radio" && active.name === first.name;
          if (event.shiftKey && (active === first || inFirstGroup || !dialog.contains(active))) {
            event.preventDefault();
            last.focus();
          } else if (!event.shiftKey && (active === last || !dialog.contains(active))) {
            event.preventDefault();
            first.focus();
          }
        }
      }

      // Focus that escaped to the page (a click outside) is brought back by the next key.
      function onPageKey(event) {
        if (!host.isConnected || root.activeElement) return;
        if (event.key === "Tab" || event.key === "Escape") {
          onKey(event);
          if (event.key === "Tab" && !event.defaultPrevented) {
            event.preventDefault();
            (focusables()[0] || dialog).focus();
          }
        }
      }

      if (o.preview) previewed = close;
      dialog.addEventListener("keydown", onKey);
      document.addEventListener("keydown", onPageKey, true);

      function screen(...children) {
        const parts = children.filter((child) => child !== null && child !== undefined);
        dialog.replaceChildren(h("h2", { id: titleId, text: copy.title }), ...parts);
        const first = dialog.querySelector("[data-autofocus]") || focusables()[0];
        // A preview must not take the focus from the editor typing into it.
        if (first && !o.preview) first.focus();
      }

      function actions(...buttons) {
        return h("div", { class: "actions" }, ...buttons);
      }

      function button(label, kind, onclick, extra) {
        return h("button", { type: "button", class: kind, onclick, ...(extra || {}) }, label);
      }

      // Click-to-cancel: in compliance mode every step offers to cancel at once, through the
      // same submission as declining the offer. Before a reason is chosen it records "other"
      // when the flow has it, else the flow's first reason (the service requires one).
      function cancelNow(reason, feedback, errorSlot) {
        if (!flow.compliance_mode) return null;
        const fallback = flow.reasons.some((r) => r.code === "other") ? "other" : flow.reasons[0].code;
        return button(copy.cancel_now_button, "secondary", () =>
          submit(reason() || fallback, feedback(), false, null, errorSlot),
        { "data-cancel-now": "" });
      }

      /** The link a contact or redirect offer shows; only https and mailto are followed. */
      function offerLink(offer) {
        let href = null;
        let text = null;
        if (offer.kind === "redirect") [href, text] = [offer.url, offer.label];
        else if (offer.kind === "contact" && offer.url) [href, text] = [offer.url, offer.url];
        else if (offer.kind === "contact" && offer.email) [href, text] = [`mailto:${offer.email}`, offer.email];
        if (!href || !/^(https:\/\/|mailto:)/i.test(href)) return null;
        return h("p", {}, h("a", { href, target: "_blank", rel: "noopener noreferrer", text }));
      }

      /** Who chose `reason`, with the facts the flow is routed by. */
      function customer(reason) {
        const body = { customer_email: o.customerEmail, customer_hash: o.customerHash, reason };
        Object.assign(body, factsOf(o));
        if (o.subscriptionId) body.provider_subscription_id = o.subscriptionId;
        return body;
      }

      async function submit(reason, feedback, accepted, pauseMonths, errorSlot) {
        busy = true;
        dialog.setAttribute("aria-busy", "true");
        for (const b of dialog.querySelectorAll("button")) b.disabled = true;
        const body = customer(reason);
        body.offer_accepted = accepted;
        if (feedback) body.feedback = feedback;
        if (o.customerName) body.customer_name = o.customerName;
        if (pauseMonths) body.pause_months = pauseMonths;
        try {
          const data = await send(body);
          result = {
            outcome: data.status === "recovered" ? "saved" : "cancelled",
            churnEventId: data.churn_event_id,
            offer: data.offer || undefined,
          };
          busy = false;
          dialog.removeAttribute("aria-busy");
          const message = result.outcome === "saved" ? copy.saved_message : copy.cancelled_message;
          screen(
            h("p", { role: "status", text: message }),
            actions(button(copy.done_button, "primary", close, { "data-autofocus": true })),
          );
        } catch (error) {
          busy = false;
          dialog.removeAttribute("aria-busy");
          for (const b of dialog.querySelectorAll("button")) b.disabled = false;
          errorSlot.textContent = `${copy.error_message} (${error.message})`;
        }
      }

      function reasonsScreen() {
        let chosen = null;
        const errorSlot = h("p", { class: "error", role: "alert" });
        const proceed = button(copy.continue_button, "primary", () => {
          const feedback = feedbackBox.value.trim();
          const offer = (flow.offers || {})[chosen];
          if (offer && offer.kind !== "none") {
            step(customer(chosen));
            offerScreen(chosen, feedback, offer);
          } else submit(chosen, feedback, false, null, errorSlot);
        }, { disabled: true });
        const list = flow.reasons.map((reason, i) =>
          h(
            "label",
            { class: "reason" },
            h("input", {
              type: "radio",
              name: "reason",
              value: reason.code,
              id: `churn-cf-reason-${i}`,
              onchange: () => {
                chosen = reason.code;
                proceed.disabled = false;
              },
            }),
            h("span", { text: reason.label }),
          ),
        );
        const feedbackBox = h("textarea", { id: "churn-cf-feedback", maxlength: 2000 });
        screen(
          h("fieldset", {}, h("legend", { text: copy.reason_prompt }), ...list),
          h("label", { class: "field", for: "churn-cf-feedback", text: copy.feedback_label }),
          feedbackBox,
          errorSlot,
          actions(
            button(copy.close_button, "secondary", close),
            cancelNow(() => chosen, () => feedbackBox.value.trim(), errorSlot),
            proceed,
          ),
        );
      }

      function offerScreen(reason, feedback, offer) {
        const errorSlot = h("p", { class: "error", role: "alert" });
        const text = {
          discount: copy.discount_text,
          pause: copy.pause_text,
          downgrade: copy.downgrade_text,
          trial_extension: copy.trial_extension_text,
          plan_change: copy.plan_change_text,
          contact: copy.contact_text,
          redirect: copy.redirect_text,
        }[offer.kind];
        let months = null;
        if (offer.kind === "pause") {
          months = h("select", { id: "churn-cf-pause" });
          for (let n = 1; n <= offer.max_months; n++) {
            months.append(h("option", { value: n, selected: n === offer.max_months }, String(n)));
          }
        }
        const pauseMonths = () => (months ? Number(months.value) : null);
        screen(
          h("p", { class: "field", text: copy.offer_title, id: "churn-cf-offer-title" }),
          h("p", { text: fill(text || "", offer), id: "churn-cf-offer" }),
          offerLink(offer),
          months && h("label", { class: "field", for: "churn-cf-pause", text: copy.pause_months_label }),
          months,
          errorSlot,
          actions(
            cancelNow(() => reason, () => feedback, errorSlot),
            button(copy.decline_button, "secondary", () =>
              submit(reason, feedback, false, pauseMonths(), errorSlot),
            ),
            button(copy.accept_button, "primary", () =>
              submit(reason, feedback, true, pauseMonths(), errorSlot),
            { "data-autofocus": true, "aria-describedby": "churn-cf-offer" }),
          ),
        );
      }

      const start = o.reason && flow.reasons.some((r) => r.code === o.reason) && (flow.offers || {})[o.reason];
      if (start && start.kind !== "none") offerScreen(o.reason, "", start);
      else reasonsScreen();
    });
  }

  window.ChurnCancelFlow = Object.freeze({ open, preview });
})();
