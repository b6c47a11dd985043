// The cancel-flow editor: hands the form's unsaved values to the preview frame, where the
// widget itself shows them (the frame is sandboxed and calls nothing), and hides the offer
// inputs that do not apply to a reason's offer kind. Without it the frame shows the saved
// flow and every input stays visible (the server ignores those of other kinds).
(function () {
  var form = document.getElementById("flow-form");
  var frame = document.getElementById("preview");
  // A page without a preview (a segmented flow's) still hides the other kinds' inputs.
  if (!form || !form.elements) return;
  // The reason whose offer is being edited: the preview opens on that offer.
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

  function flow() {
    var reasons = [];
    var offers = {};
    for (var n = 0; form.elements["code_" + n]; n++) {
      var code = value("code_" + n);
      if (!code) continue;
      reasons.push({ code: code, label: value("label_" + n) });
      var kind = value("kind_" + n);
      if (kind === "discount") offers[code] = { kind: kind, percent: num("percent_" + n), months: num("months_" + n) };
      else if (kind === "pause") offers[code] = { kind: kind, max_months: num("max_months_" + n) };
      else if (kind === "downgrade") offers[code] = { kind: kind, plan: value("plan_" + n) };
      else if (kind === "trial_extension") offers[code] = { kind: kind, days: num("days_" + n) };
      else if (kind === "plan_change") offers[code] = { kind: kind, plan: value("plan_" + n), price_id: value("price_id_" + n) };
      else if (kind === "contact") offers[code] = value("url_" + n) ? { kind: kind, url: value("url_" + n) } : { kind: kind, email: value("email_" + n) };
      else if (kind === "redirect") offers[code] = { kind: kind, url: value("url_" + n), label: value("link_label_" + n) };
    }
    var copy = {};
    form.querySelectorAll("input[name^='copy_']").forEach(function (el) {
      copy[el.name.slice(5)] = el.value.trim() || el.placeholder;
    });
    return {
      reasons: reasons,
      offers: offers,
      copy: copy,
      colors: { primary: value("color_primary"), background: value("color_background"), text: value("color_text") },
      language: value("language") || "en",
      compliance_mode: !!(compliance && compliance.checked),
    };
  }

  function showKinds() {
    form.querySelectorAll("[data-row]").forEach(function (row) {
      var kind = row.querySelector("[data-kind]").value;
      row.querySelectorAll("[data-offer]").forEach(function (field) {
        // An input may serve several kinds (`data-offer="contact redirect"`).
        field.hidden = field.getAttribute("data-offer").split(" ").indexOf(kind) < 0;
      });
    });
  }

  function send() {
    if (!frame) return;
    frame.contentWindow.postMessage({ flow: flow(), reason: offerOf }, "*");
  }

  function update(event) {
    var row = event.target.closest && event.target.closest("[data-row]");
    var offerInput = row && (event.target.hasAttribute("data-kind") || event.target.closest("[data-offer]"));
    offerOf = offerInput ? value("code_" + row.getAttribute("data-row")) || null : null;
    showKinds();
    send();
  }

  form.addEventListener("input", update);
  form.addEventListener("change", update);
  // The frame opens on the saved flow; a page shown again after a refused save holds more.
  if (frame) frame.addEventListener("load", send);
  showKinds();
})();
