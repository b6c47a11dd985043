// The cancel-flow editor: hands the form's unsaved values to the preview frames, where the
// widget itself shows them (each frame is sandboxed and calls nothing), and hides the offer
// inputs that do not apply to a reason's offer kind. On a segmented flow's page each
// experiment variant (inputs named `v0_…`) has a frame of its own showing the flow as that
// variant changes it, its rows shown only when it has its own reasons or offers, and unused
// variants wait behind "Add a variant". Without it the frames show the saved flows and every input stays
// visible (the server ignores those that do not apply).
(function () {
  var form = document.getElementById("flow-form");
  if (!form || !form.elements) return;
  var frame = document.getElementById("preview");
  // The reason whose offer is being edited, and whose inputs hold it: its preview opens there.
  var offerOf = null;
  var compliance = document.getElementById("compliance_mode");

  function value(name) {
    var el = form.elements[name];
    return el ? el.value.trim() : "";
  }

  function num(name) {
    var v = value(name);
    return v === "" ? undefined : Number(v);
  }

  // The reasons and offers under `p` (empty for the flow, `v0_` for its first variant).
  function reasonsOf(p) {
    var reasons = [];
    var offers = {};
    for (var n = 0; form.elements[p + "code_" + n]; n++) {
      var code = value(p + "code_" + n);
      if (!code) continue;
      reasons.push({ code: code, label: value(p + "label_" + n) });
      var kind = value(p + "kind_" + n);
      var f = function (name) { return p + name + "_" + n; };
      if (kind === "discount") offers[code] = { kind: kind, percent: num(f("percent")), months: num(f("months")) };
      else if (kind === "pause") offers[code] = { kind: kind, max_months: num(f("max_months")) };
      else if (kind === "downgrade") offers[code] = { kind: kind, plan: value(f("plan")) };
      else if (kind === "trial_extension") offers[code] = { kind: kind, days: num(f("days")) };
      else if (kind === "plan_change") offers[code] = { kind: kind, plan: value(f("plan")), price_id: value(f("price_id")) };
      else if (kind === "contact") offers[code] = value(f("url")) ? { kind: kind, url: value(f("url")) } : { kind: kind, email: value(f("email")) };
      else if (kind === "redirect") offers[code] = { kind: kind, url: value(f("url")), label: value(f("link_label")) };
    }
    return { reasons: reasons, offers: offers };
  }

  // The texts under `p`, a blank one standing for its placeholder (the default, or the flow's).
  function copyOf(p) {
    var copy = {};
    form.querySelectorAll("input[name^='" + p + "copy_']").forEach(function (el) {
      copy[el.name.slice(p.length + 5)] = el.value.trim() || el.placeholder;
    });
    return copy;
  }

  function flow() {
    var own = reasonsOf("");
    return {
      reasons: own.reasons,
      offers: own.offers,
      copy: copyOf(""),
      colors: { primary: value("color_primary"), background: value("color_background"), text: value("color_text") },
      language: value("language") || "en",
      compliance_mode: !!(compliance && compliance.checked),
    };
  }

  function checked(name) {
    var toggle = form.elements[name];
    // The hidden `false` shares the name: the checkbox is the last of them.
    var box = toggle && toggle.length ? toggle[toggle.length - 1] : toggle;
    return !!(box && box.checked);
  }

  function hasOwn(p) {
    return checked(p + "own_reasons") || checked(p + "own_offers");
  }

  // The flow as variant `p` shows it, as the server's `FlowVariant::apply`: its texts over
  // the flow's, its own reasons and offers when it has them, and the flow's offers only for
  // the reasons it shows.
  function variantFlow(base, p) {
    var shown = Object.assign({}, base);
    var own = reasonsOf(p);
    if (checked(p + "own_reasons")) shown.reasons = own.reasons;
    if (checked(p + "own_offers")) shown.offers = own.offers;
    else {
      shown.offers = {};
      shown.reasons.forEach(function (r) {
        if (base.offers[r.code]) shown.offers[r.code] = base.offers[r.code];
      });
    }
    var copy = Object.assign({}, base.copy);
    form.querySelectorAll("input[name^='" + p + "copy_']").forEach(function (el) {
      if (el.value.trim()) copy[el.name.slice(p.length + 5)] = el.value.trim();
    });
    shown.copy = copy;
    return shown;
  }

  function showKinds() {
    form.querySelectorAll("[data-row]").forEach(function (row) {
      var kind = row.querySelector("[data-kind]").value;
      row.querySelectorAll("[data-offer]").forEach(function (field) {
        // An input may serve several kinds (`data-offer="contact redirect"`).
        field.hidden = field.getAttribute("data-offer").split(" ").indexOf(kind) < 0;
      });
    });
    form.querySelectorAll("[data-own]").forEach(function (section) {
      section.hidden = !hasOwn(section.getAttribute("data-own"));
    });
  }

  function reasonFor(p) {
    return offerOf && offerOf.prefix === p ? offerOf.code : null;
  }

  function send() {
    var base = flow();
    if (frame) frame.contentWindow.postMessage({ flow: base, reason: reasonFor("") }, "*");
    form.querySelectorAll("iframe[data-preview]").forEach(function (f) {
      var p = f.getAttribute("data-preview");
      if (f.closest("[data-variant]").hidden) return;
      f.contentWindow.postMessage({ flow: variantFlow(base, p), reason: reasonFor(p) }, "*");
    });
  }

  function update(event) {
    var row = event.target.closest && event.target.closest("[data-row]");
    var offerInput = row && (event.target.hasAttribute("data-kind") || event.target.closest("[data-offer]"));
    offerOf = null;
    if (offerInput) {
      var p = row.getAttribute("data-prefix") || "";
      var code = value(p + "code_" + row.getAttribute("data-row"));
      if (code) offerOf = { prefix: p, code: code };
    }
    showKinds();
    send();
  }

  // Variants: the unused ones wait behind "Add a variant"; "Remove" blanks one's key and weight,
  // which is how the server knows it is not used.
  var add = form.querySelector("[data-add-variant]");
  function showAdd() {
    if (add) add.hidden = !form.querySelector("[data-variant][hidden]");
  }
  form.querySelectorAll("[data-variant]").forEach(function (section) {
    if (section.hasAttribute("data-unused")) section.hidden = true;
    var remove = section.querySelector("[data-remove-variant]");
    if (!remove) return;
    remove.hidden = false;
    remove.addEventListener("click", function () {
      var p = section.getAttribute("data-variant");
      form.elements[p + "key"].value = "";
      form.elements[p + "weight"].value = "";
      section.hidden = true;
      showAdd();
      if (add) add.focus();
    });
  });
  if (add) {
    add.addEventListener("click", function () {
      var next = form.querySelector("[data-variant][hidden]");
      if (!next) return;
      next.hidden = false;
      var p = next.getAttribute("data-variant");
      var weight = form.elements[p + "weight"];
      if (!weight.value) weight.value = "1";
      form.elements[p + "key"].focus();
      showAdd();
      send();
    });
    showAdd();
  }

  form.addEventListener("input", update);
  form.addEventListener("change", update);
  // The frames open on the saved flows; a page shown again after a refused save holds more.
  if (frame) frame.addEventListener("load", send);
  form.querySelectorAll("iframe[data-preview]").forEach(function (f) {
    f.addEventListener("load", send);
  });
  showKinds();
})();
