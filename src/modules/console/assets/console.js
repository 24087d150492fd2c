// The console's own script: a copy button for secrets shown once, and chips that take Enter.
// Served from this origin (no inline script); every page works without it.
'use strict';

function enhance(root) {
  for (const button of root.querySelectorAll('[data-copy]')) {
    if (button.dataset.enhanced) continue;
    button.dataset.enhanced = 'true';
    button.addEventListener('click', async () => {
      const id = button.dataset.copy;
      const input = document.getElementById(id);
      const status = document.querySelector(`[data-copied-for="${id}"]`);
      input.select();
      try {
        await navigator.clipboard.writeText(input.value);
        if (status) status.textContent = 'Copied to the clipboard.';
      } catch {
        if (status) status.textContent = 'Select the secret and copy it (Ctrl+C).';
      }
    });
  }
  for (const fieldset of root.querySelectorAll('[data-chips]')) {
    if (fieldset.dataset.enhanced) continue;
    fieldset.dataset.enhanced = 'true';
    const name = fieldset.dataset.chips;
    const input = fieldset.querySelector(`input[name="${name}_new"]`);
    const list = fieldset.querySelector('.chip-list');
    input.addEventListener('keydown', (event) => {
      if (event.key !== 'Enter' || input.value.trim() === '') return;
      event.preventDefault();
      for (const value of input.value.trim().split(/[\s,]+/)) {
        const taken = [...fieldset.querySelectorAll(`input[name="${name}"]`)].some(
          (box) => box.value === value,
        );
        if (taken) continue;
        const index = fieldset.querySelectorAll('.chip-box').length;
        const item = document.createElement('li');
        const box = document.createElement('input');
        box.type = 'checkbox';
        box.className = 'chip-box';
        box.id = `${name}-added-${index}`;
        box.name = name;
        box.value = value;
        box.checked = true;
        const label = document.createElement('label');
        label.className = 'chip';
        label.htmlFor = box.id;
        label.textContent = value;
        item.append(box, label);
        list.append(item);
      }
      input.value = '';
    });
  }
}

document.addEventListener('DOMContentLoaded', () => enhance(document));
document.addEventListener('htmx:load', (event) => enhance(event.target));
