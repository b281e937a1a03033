// rocketq console: the little behaviour pages need; everything works without it.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // a destructive form asks first (data-confirm="Delete topic X?")
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
  // a form that may take a while says so and cannot be sent twice
  for (const form of document.querySelectorAll("form")) {
    form.addEventListener("submit", () => {
      const button = form.querySelector("button[type=submit]");
      if (button && !button.disabled) {
        setTimeout(() => { button.disabled = true; button.textContent = "Working…"; }, 0);
      }
    });
  }
});
