// Silica web app: the only script. Everything works without it; it adds three conveniences.
// 1. A chosen inventory file is loaded into the edit box, so the user can look at it and change it.
//    On submit, the box's text is sent as a file (multipart), not as a form field: form fields are
//    capped at 1 MiB by the server's form parser, while uploads may be as large as the upload limit.
// 2. Tables marked "sortable" sort on a header click (a button in each header; aria-sort says how).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("input[type=file][data-edit]").forEach(function (input) {
    var box = document.getElementById(input.getAttribute("data-edit"));
    if (!box) { return; }
    input.addEventListener("change", function () {
      var file = input.files && input.files[0];
      if (!file) { return; }
      file.text().then(function (text) { box.value = text; });
    });
    var form = input.form;
    if (!form || typeof DataTransfer === "undefined") { return; }
    form.addEventListener("submit", function () {
      if (!box.value.trim()) { return; }
      var chosen = input.files && input.files[0];
      var name = chosen ? chosen.name : "inventory.yaml";
      var data = new DataTransfer();
      data.items.add(new File([box.value], name, { type: "text/yaml" }));
      input.files = data.files;
      box.disabled = true; // the file carries the (maybe edited) text
      window.addEventListener("pageshow", function () { box.disabled = false; }, { once: true });
    });
  });

  function key(cell) {
    var text = (cell.textContent || "").trim();
    var plain = text.replace(/[$,%\s]/g, "");
    var value = parseFloat(plain);
    return (plain !== "" && !isNaN(value) && /^-?[\d.]+(e[+-]?\d+)?/i.test(plain)) ? value : text.toLowerCase();
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.querySelectorAll("thead th");
    heads.forEach(function (th, column) {
      var label = th.textContent;
      if (!label.trim()) { return; }
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.textContent = label;
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[column]), y = key(b.cells[column]);
          var numeric = typeof x === "number" && typeof y === "number";
          var order = numeric ? x - y : String(x).localeCompare(String(y));
          if (typeof x !== typeof y) { order = typeof x === "number" ? -1 : 1; } // dashes last
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
});
