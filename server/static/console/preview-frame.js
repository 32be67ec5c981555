// The email preview frame. It runs sandboxed (an opaque origin: nothing of the console is reachable)
// under a policy that lets the email's own styles apply but no script of it run. The console posts
// the rendered HTML; it is parsed inertly (DOMParser runs nothing) and shown as this frame's document.
// A classic script, not a module: an opaque origin would need CORS for a module.
'use strict';
window.addEventListener('message', function (event) {
  if (event.source !== window.parent || !event.data || typeof event.data.html !== 'string') return;
  var doc = new DOMParser().parseFromString(event.data.html, 'text/html');
  // Belt and braces: the policy already refuses inline script, handlers and javascript: URLs.
  doc.querySelectorAll('script, iframe, object, embed, base, meta[http-equiv], form').forEach(function (el) { el.remove(); });
  doc.querySelectorAll('*').forEach(function (el) {
    Array.prototype.slice.call(el.attributes).forEach(function (attr) {
      if (/^on/i.test(attr.name) || /^\s*javascript:/i.test(attr.value)) el.removeAttribute(attr.name);
    });
  });
  document.replaceChild(document.adoptNode(doc.documentElement), document.documentElement);
});
window.parent.postMessage({ previewReady: true }, '*');
