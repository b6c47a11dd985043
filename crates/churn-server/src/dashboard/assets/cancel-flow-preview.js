// The cancel-flow preview, framed by the editor in a sandbox: the widget shows the saved flow
// (the body's data-flow), then every flow the editor posts. Nothing is fetched or stored.
(function () {
  var flow = JSON.parse(document.body.getAttribute("data-flow"));
  var reason = null;

  function show() {
    ChurnCancelFlow.preview(flow, reason);
  }

  window.addEventListener("message", function (event) {
    if (event.source !== window.parent || !event.data || !event.data.flow) return;
    flow = event.data.flow;
    reason = event.data.reason;
    show();
  });
  document.getElementById("reopen").addEventListener("click", show);
  show();
})();
