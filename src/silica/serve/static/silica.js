// Silica web app: the only script. It loads a chosen inventory file into the edit box, so the user
// can look at it and change it before advising. Everything else works without JavaScript.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("input[type=file][data-edit]").forEach(function (input) {
    input.addEventListener("change", function () {
      var box = document.getElementById(input.getAttribute("data-edit"));
      var file = input.files && input.files[0];
      if (!box || !file) { return; }
      file.text().then(function (text) { box.value = text; });
    });
  });
});
