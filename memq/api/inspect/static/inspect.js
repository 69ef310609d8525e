/* memq inspector: keeps the API key in this tab's sessionStorage (never a cookie, never
   localStorage), routes on the URL hash and puts server-rendered HTML fragments into
   <main>. Every value in a fragment is escaped by the server; this script inserts text it
   builds itself only through textContent. */
"use strict";

(function () {
  const KEY = "memq.inspect.key";
  const PAGES = ["conversations", "conversation", "episode", "facts", "search", "status"];
  const base = document.body.dataset.base;
  const login = document.getElementById("login");
  const loginForm = document.getElementById("login-form");
  const loginMessage = document.getElementById("login-message");
  const keyInput = document.getElementById("key");
  const nav = document.getElementById("nav");
  const page = document.getElementById("page");
  const progress = document.getElementById("progress");
  let latest = 0; // the newest request: older answers are dropped

  function showLogin(message) {
    sessionStorage.removeItem(KEY);
    nav.hidden = true;
    page.replaceChildren();
    progress.textContent = "";
    login.hidden = false;
    loginMessage.textContent = message || "";
    keyInput.value = "";
    keyInput.focus();
  }

  function route() {
    const hash = location.hash.replace(/^#\/?/, "") || "conversations";
    const name = hash.split(/[/?]/)[0];
    return PAGES.includes(name) ? hash : "conversations";
  }

  function markCurrent(name) {
    for (const link of nav.querySelectorAll("a[data-page]")) {
      if (link.dataset.page === name) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
  }

  async function errorText(response) {
    try {
      const body = await response.json();
      return body.error && body.error.message ? body.error.message : response.statusText;
    } catch (e) {
      return response.statusText;
    }
  }

  async function load(path, options) {
    const key = sessionStorage.getItem(KEY);
    if (!key) return showLogin("");
    const mine = ++latest;
    progress.textContent = "Loading…";
    let response;
    try {
      response = await fetch(base + "/fragments/" + path, {
        method: (options && options.method) || "GET",
        headers: { Authorization: "Bearer " + key },
        cache: "no-store",
        credentials: "omit",
      });
    } catch (e) {
      if (mine === latest) progress.textContent = "The API did not answer: " + e.message;
      return;
    }
    if (mine !== latest) return;
    if (response.status === 401) {
      return showLogin("The API refused the key (401 Unauthorized): " + (await errorText(response)) +
        " Log in again with a valid key.");
    }
    if (!response.ok) {
      const problem = document.createElement("p");
      problem.className = "message";
      problem.setAttribute("role", "alert");
      problem.textContent = response.status + ": " + (await errorText(response));
      page.replaceChildren(problem);
      progress.textContent = "";
      return;
    }
    page.innerHTML = await response.text(); // rendered and escaped by the server
    progress.textContent = "";
    const heading = page.querySelector("h2");
    if (heading) {
      document.title = heading.textContent.trim() + " · memq inspector";
      heading.tabIndex = -1;
      heading.focus();
    }
  }

  function show() {
    if (!sessionStorage.getItem(KEY)) return showLogin("");
    login.hidden = true;
    nav.hidden = false;
    const hash = route();
    markCurrent(hash.split(/[/?]/)[0].replace(/^(conversation|episode)$/, "conversations"));
    load(hash);
  }

  loginForm.addEventListener("submit", function (event) {
    event.preventDefault();
    const key = keyInput.value.trim();
    if (!key) return;
    sessionStorage.setItem(KEY, key);
    keyInput.value = "";
    show();
  });

  document.getElementById("logout").addEventListener("click", function () {
    showLogin("Logged out: the key is forgotten by this tab.");
  });

  page.addEventListener("submit", function (event) {
    const form = event.target.closest("form[data-route]");
    if (!form) return;
    event.preventDefault();
    const params = new URLSearchParams();
    for (const [name, value] of new FormData(form)) if (String(value).trim()) params.set(name, String(value).trim());
    const query = params.toString();
    const target = "#/" + form.dataset.route + (query ? "?" + query : "");
    if (location.hash === target) show();
    else location.hash = target;
  });

  page.addEventListener("click", function (event) {
    const button = event.target.closest("button.retry");
    if (!button) return;
    const params = new URLSearchParams({ conversation_id: button.dataset.conversation, item: button.dataset.item });
    button.disabled = true;
    load("quarantine/retry?" + params.toString(), { method: "POST" });
  });

  document.querySelector("a.skip").addEventListener("click", function (event) {
    event.preventDefault(); // the hash is the router's: move focus without changing it
    document.getElementById("main").focus();
  });

  window.addEventListener("hashchange", show);
  show();
})();
