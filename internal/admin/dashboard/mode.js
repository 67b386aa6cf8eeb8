(function () {
  'use strict';
  var form = document.getElementById('mode-switch');
  if (!form) { return; }
  var meta = document.querySelector('meta[name="floodgate-csrf"]');
  var result = document.getElementById('mode-result');
  form.hidden = false;
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    var button = form.querySelector('button');
    var headers = { 'Content-Type': 'application/json' };
    if (meta) { headers['X-Floodgate-CSRF'] = meta.content; }
    button.disabled = true;
    result.textContent = 'Switching…';
    fetch('/admin/mode', {
      method: 'PUT', headers: headers, credentials: 'same-origin',
      body: JSON.stringify({ mode: button.value })
    }).then(function (res) {
      if (res.ok) { location.reload(); return; }
      return res.json().then(function (p) { throw new Error(p.detail || ('HTTP ' + res.status)); },
        function () { throw new Error('HTTP ' + res.status); });
    }).catch(function (err) {
      button.disabled = false;
      result.textContent = 'The mode was not switched: ' + err.message;
    });
  });
})();
