// remem inspector: small enhancements only; every page reads and works without this file.
"use strict";
(function () {
  // memory page: a slider over the memory's history times fills the as_of field
  var form = document.getElementById("as-of-form");
  if (!form) { return; }
  var first = parseFloat(form.dataset.first), last = parseFloat(form.dataset.last);
  var input = document.getElementById("as-of-input");
  if (!input || !isFinite(first) || !isFinite(last)) { return; }
  var wrap = document.createElement("div");
  wrap.className = "field grow";
  var label = document.createElement("label");
  label.htmlFor = "as-of-slider";
  label.textContent = "Slide through the history";
  var slider = document.createElement("input");
  slider.type = "range";
  slider.id = "as-of-slider";
  var lo = Math.floor(first) - 1, hi = Math.ceil(last) + 1;
  slider.min = String(lo);
  slider.max = String(hi);
  slider.step = "1";
  var text = input.value.trim();
  var current = /^[0-9]+(\.[0-9]+)?$/.test(text) ? parseFloat(text)
    : Date.parse(/[zZ]|[+-][0-9][0-9]:?[0-9][0-9]$/.test(text) ? text : text + "Z") / 1000;
  slider.value = String(isFinite(current) ? current : hi);
  slider.addEventListener("input", function () {
    input.value = new Date(parseInt(slider.value, 10) * 1000).toISOString().slice(0, 19);
  });
  slider.addEventListener("change", function () { form.submit(); });
  wrap.appendChild(label);
  wrap.appendChild(slider);
  form.insertBefore(wrap, form.firstChild);
})();
