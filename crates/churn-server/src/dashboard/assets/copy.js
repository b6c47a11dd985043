// Copy buttons: each `button[data-copy]` copies the text of the element it names. Without
// script the buttons stay hidden and the value is still there to select.
document.querySelectorAll("button[data-copy]").forEach(function (button) {
  var target = document.getElementById(button.getAttribute("data-copy"));
  if (!target || !navigator.clipboard) return;
  button.hidden = false;
  button.addEventListener("click", function () {
    navigator.clipboard.writeText(target.textContent.trim()).then(function () {
      button.textContent = "Copied";
    });
  });
});
