// The form for every input the drawing pad does not feed (numbers, a table row, token ids).
import { defaultShape } from '../config.js';
import { $ } from './dom.js';

const MAX_FIELDS = 32; // more values per input: one textarea

function numberField(inp, i, manyInputs) {
  const label = document.createElement('label');
  label.textContent = (inp.featureNames || [])[i] || `${manyInputs ? `${inp.name} ` : 'x'}${i}`;
  const field = document.createElement('input');
  field.type = 'number'; field.step = inp.integer ? '1' : 'any'; field.value = '0'; field.name = `f${i}`;
  label.append(field);
  return label;
}

function valuesArea(inp) {
  const area = document.createElement('textarea');
  area.placeholder = `${inp.features} ${inp.integer ? 'integers' : 'numbers'} separated by commas or spaces`;
  area.setAttribute('aria-label', inp.name);
  return area;
}

// formInputs: the inputs the form feeds; manyInputs: the model has more than one input (fields name theirs).
// onSubmit: called on submit (the form is only shown when it has inputs).
export function setupForm(formInputs, manyInputs, onSubmit) {
  for (const inp of formInputs) {
    const group = document.createElement('fieldset');
    group.dataset.input = inp.name;
    const legend = document.createElement('legend');
    legend.textContent = `${inp.name} ${inp.dtype}[${defaultShape(inp).slice(1).join(',')}]`;
    group.append(legend);
    if (inp.features <= MAX_FIELDS) {
      for (let i = 0; i < inp.features; i++) group.append(numberField(inp, i, manyInputs));
    } else {
      group.append(valuesArea(inp));
    }
    $('fields').append(group);
  }
  if (!formInputs.length) return;
  $('flat-input').hidden = false;
  $('flat-input').addEventListener('submit', (ev) => { ev.preventDefault(); onSubmit(); });
}

// {inputName: {values, shape}} of every form input; an Error naming the input when a field is not a number.
export function readFields(formInputs) {
  const feeds = {};
  for (const inp of formInputs) {
    const group = $('fields').querySelector(`fieldset[data-input="${CSS.escape(inp.name)}"]`);
    const area = group.querySelector('textarea');
    const values = area
      ? area.value.split(/[\s,;]+/).filter(Boolean).map(Number)
      : Array.from(group.querySelectorAll('input'), (el) => Number(el.value));
    if (values.length !== inp.features || values.some((v) => !Number.isFinite(v))) {
      throw new Error(`${inp.name}: expected ${inp.features} numbers, got ${values.length}`);
    }
    if (inp.integer && values.some((v) => !Number.isInteger(v))) throw new Error(`${inp.name}: expected integers`);
    feeds[inp.name] = { values, shape: defaultShape(inp) };
  }
  return feeds;
}
