// New run: task, dataset (the synthetic one, the server's, or CSV files uploaded from here),
// model family, size, preset and free advanced options; POST /api/v1/runs.
import * as api from '../api.js';
import { h, put, clear, errorBanner, banner } from '../ui.js';

const LS_KINDS = [['mp', 'memory polynomial'], ['gmp', 'generalized memory polynomial (gmp_ls)']];

const TASKS = [
  ['train-pa', 'Train a PA model'],
  ['train-dpd', 'Train a DPD (needs a trained PA run)'],
  ['fit-ls', 'Fit by least squares (MP / GMP)'],
];

function uuid() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
}

// "name = value" lines: numbers become JSON numbers, true and false booleans, anything else a string.
export function parseOptions(text) {
  const out = {}, errors = [];
  text.split(/\r?\n/).forEach((line, i) => {
    const t = line.replace(/#.*/, '').trim();
    if (!t) return;
    const m = /^([A-Za-z_][A-Za-z0-9_-]*)\s*[=:]\s*(.*)$/.exec(t);
    if (!m) { errors.push(`line ${i + 1}: write name = value`); return; }
    const v = m[2].trim();
    out[m[1].replace(/-/g, '_')] = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(v) ? Number(v)
      : /^(true|false)$/i.test(v) ? v.toLowerCase() === 'true' : v;
  });
  return { options: out, errors };
}

function field(id, labelText, control, help) {
  return h('div', { class: 'field', 'data-field': id },
    h('label', { for: id, text: labelText }), control,
    help ? h('span', { class: 'help', id: `${id}-help`, text: help }) : null,
    h('span', { class: 'err', id: `${id}-err`, 'aria-live': 'polite' }));
}

export default async function newPage(ctx) {
  let idem = uuid(), lastAsked = null;
  const [ds, runs, mods] = await Promise.all([
    api.get('/datasets').catch((e) => ({ datasets: [{ name: 'synth', kind: 'synth' }], error: e })),
    api.get('/runs?status=succeeded&limit=200').catch(() => ({ runs: [] })),
    api.get('/models').catch((e) => ({ models: [], error: e })),
  ]);
  // the trainable families, as `dpd models` lists them: name, about
  const FAMILIES = mods.models.filter((m) => !m.least_squares).map((m) => [m.name, m.about]);
  if (!ctx.alive()) return;

  const task = h('select', { id: 'f-verb', name: 'verb' }, TASKS.map(([v, t]) => h('option', { value: v, text: t })));
  const dataset = h('select', { id: 'f-dataset', name: 'dataset', 'aria-describedby': 'f-dataset-help' });
  const fillDatasets = (list, pick) => {
    clear(dataset);
    for (const d of list) dataset.append(h('option', { value: d.name, text: d.kind === 'synth' ? `${d.name} (built-in synthetic)` : `${d.name} (${d.kind})` }));
    if (pick) dataset.value = pick;
  };
  fillDatasets(ds.datasets);
  const family = h('select', { id: 'f-model', name: 'model', 'aria-describedby': 'f-model-help' },
    FAMILIES.map(([f, about]) => h('option', { value: f, text: `${f} — ${about}` })));
  const hidden = h('input', { id: 'f-hidden', name: 'hidden', type: 'number', min: 1, max: 1024, step: 1, inputmode: 'numeric', placeholder: '23' });
  const layers = h('input', { id: 'f-layers', name: 'layers', type: 'number', min: 1, max: 16, step: 1, inputmode: 'numeric', placeholder: '1' });
  const preset = h('select', { id: 'f-preset', name: 'preset' },
    h('option', { value: 'quick', text: 'quick (10 epochs, frame 50, stride 16)' }),
    h('option', { value: 'full', text: 'full (150 epochs, frame 200, stride 1)' }),
    h('option', { value: '', text: 'none (the CLI defaults)' }));
  const epochs = h('input', { id: 'f-epochs', name: 'epochs', type: 'number', min: 1, step: 1, inputmode: 'numeric', placeholder: 'from the preset' });
  const pa = h('select', { id: 'f-pa', name: 'pa' });
  const paRuns = runs.runs.filter((r) => r.verb === 'train-pa' || (r.verb === 'fit-ls' && (!r.options || r.options.target !== 'dpd')));
  if (!paRuns.length) pa.append(h('option', { value: '', text: 'no succeeded PA run yet' }));
  for (const r of paRuns) pa.append(h('option', { value: r.id, text: `${r.id} — ${r.verb} ${r.options && (r.options.model || r.options.kind) || ''} on ${r.dataset}` }));
  const kind = h('select', { id: 'f-kind', name: 'kind' }, LS_KINDS.map(([k, t]) => h('option', { value: k, text: `${k} — ${t}` })));
  const target = h('select', { id: 'f-target', name: 'target' }, h('option', { value: 'pa', text: 'pa: model the PA' }), h('option', { value: 'dpd', text: 'dpd: a predistorter for a PA run' }));
  const adv = h('textarea', { id: 'f-advanced', name: 'advanced', rows: 5, spellcheck: 'false', 'aria-describedby': 'f-advanced-help',
    placeholder: 'lr = 0.001\nseed = 7\nframe = 100\nthreads = 2' });
  // Live preview: once per epoch (free) or every N batches (an extra forward pass: red, warned).
  const previewMode = h('select', { id: 'f-preview', name: 'preview_every_batches', 'aria-describedby': 'f-preview-help' },
    h('option', { value: 'epoch', text: 'epoch: once per epoch, from the validation pass (no extra cost)' }),
    h('option', { value: 'batch', class: 'danger-text', text: 'batch: every N batches (slows training)' }));
  const previewBatches = h('input', { id: 'f-preview-batches', name: 'preview_batches', type: 'number', min: 1, max: 1000000, step: 1,
    inputmode: 'numeric', value: '100', class: 'danger-text' });
  const previewWarn = banner('error', h('strong', { text: 'Per-batch preview slows training. ' }),
    'Every N batches the worker runs one extra forward pass of the model on up to 16 384 validation samples and redraws the live plots; ' +
    'with a small N this can take longer than the training itself. The results do not change. The default, once per epoch, costs nothing.');
  previewWarn.id = 'preview-warning';
  const fPreviewN = field('f-preview-batches', 'Batches between previews', previewBatches, '1 to 1 000 000.');
  fPreviewN.classList.add('danger-text');
  const msg = h('div', { id: 'new-msg', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'primary', id: 'f-submit', text: 'Start run' });

  const fModel = field('f-model', 'Model family', family, 'dpd models lists them with their parameter counts.');
  const fHidden = field('f-hidden', 'Hidden size', hidden, 'Empty: 23 for a PA model, 15 for a DPD, as OpenDPD trains.');
  const fLayers = field('f-layers', 'Layers', layers, 'Recurrent families only.');
  const fPreset = field('f-preset', 'Preset', preset);
  fModel.classList.add('wide'), fPreset.classList.add('wide'); // their options' words, not cut off
  const fEpochs = field('f-epochs', 'Epochs', epochs, 'Empty: the preset\'s.');
  const fPa = field('f-pa', 'PA run', pa, 'A succeeded studio run that modelled the PA.');
  const fKind = field('f-kind', 'Least-squares model', kind);
  const fTarget = field('f-target', 'Target', target);

  // ---- dataset upload ----
  const upName = h('input', { id: 'u-name', type: 'text', pattern: '[A-Za-z0-9_.-]{1,64}', placeholder: 'cap1', autocomplete: 'off' });
  const upSpec = h('input', { id: 'u-spec', type: 'file', accept: '.json,application/json' });
  const upFiles = h('input', { id: 'u-files', type: 'file', accept: '.csv,text/csv', multiple: true });
  const upMsg = h('div', { id: 'u-msg', 'aria-live': 'polite' });
  const upBtn = h('button', { type: 'button', id: 'u-submit', text: 'Upload dataset' });
  upBtn.addEventListener('click', async () => {
    clear(upMsg);
    const name = upName.value.trim();
    if (!name || !upSpec.files.length || !upFiles.files.length) {
      upMsg.append(banner('warn', 'Give a name, the spec.json and the split CSV files.'));
      return;
    }
    let spec;
    try { spec = JSON.parse(await upSpec.files[0].text()); } catch (e) { upMsg.append(banner('error', `spec.json is not JSON: ${e.message}`)); return; }
    const files = {};
    for (const f of upFiles.files) files[f.name] = await f.text();
    upBtn.disabled = true;
    upMsg.append(banner('info', 'Uploading and validating…'));
    try {
      await api.post('/datasets', { name, spec, files });
      const list = await api.get('/datasets');
      fillDatasets(list.datasets, `upload:${name}`);
      clear(upMsg).append(banner('info', `Uploaded: upload:${name} is selected.`));
    } catch (e) { clear(upMsg).append(errorBanner(e)); } finally { upBtn.disabled = false; }
  });
  const upload = h('details', { id: 'upload' }, h('summary', { text: 'Upload a dataset (CSV files)' }),
    h('p', { class: 'muted', text: 'OpenDPD\'s layout: spec.json and the six split files train_input.csv, train_output.csv, val_input.csv, val_output.csv, test_input.csv, test_output.csv (columns I,Q), or data.csv for a single_csv spec. The server validates them by loading them.' }),
    h('div', { class: 'form-grid' },
      field('u-name', 'Name', upName, 'Letters, digits, _ . -'),
      field('u-spec', 'spec.json', upSpec),
      field('u-files', 'CSV files', upFiles, 'Select all the split files at once.')),
    h('div', { class: 'actions' }, upBtn), upMsg);

  const form = h('form', { id: 'new-run', novalidate: true },
    h('fieldset', null, h('legend', { text: 'Task and data' }),
      h('div', { class: 'form-grid' },
        field('f-verb', 'Task', task),
        field('f-dataset', 'Dataset', dataset, 'synth is made once on the server from dpd synth\'s defaults.'),
        fPa, fKind, fTarget),
      upload),
    h('fieldset', { id: 'model-set' }, h('legend', { text: 'Model and training' }),
      h('div', { class: 'form-grid' }, fModel, fHidden, fLayers, fPreset, fEpochs)),
    h('details', { id: 'advanced' }, h('summary', { text: 'Advanced settings' }),
      field('f-advanced', 'More options, one per line', adv,
        'Any option of the CLI without its dashes, as name = value (lr, lr_end, seed, frame, stride, batch, patience, threads, K, Q, M, thx, thh…). The server checks them against the CLI\'s table.'),
      h('div', { class: 'form-grid' },
        field('f-preview', 'Live preview', previewMode, 'How often the live plots of a running run are refreshed.'), fPreviewN),
      previewWarn),
    msg,
    h('div', { class: 'actions' }, submit));

  put(ctx.main, h('h1', { text: 'New run' }), ds.error ? errorBanner(ds.error) : null, form);

  function sync() {
    const v = task.value;
    fPa.classList.toggle('hidden', !(v === 'train-dpd' || (v === 'fit-ls' && target.value === 'dpd')));
    fKind.classList.toggle('hidden', v !== 'fit-ls');
    const batch = previewMode.value === 'batch' && v !== 'fit-ls';
    previewMode.classList.toggle('danger-text', batch);
    fPreviewN.classList.toggle('hidden', !batch);
    previewWarn.classList.toggle('hidden', !batch);
    fTarget.classList.toggle('hidden', v !== 'fit-ls');
    document.getElementById('model-set').classList.toggle('hidden', v === 'fit-ls');
    hidden.placeholder = v === 'train-dpd' ? '15' : '23'; /* the server's default (cli_train_defaults) */
    fHidden.classList.toggle('hidden', family.value === 'gmp'); /* sized by K, Q and M: the server refuses hidden */
  }
  task.addEventListener('change', sync);
  target.addEventListener('change', sync);
  family.addEventListener('change', sync);
  previewMode.addEventListener('change', sync);
  sync();

  function clearErrors() {
    clear(msg);
    for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
    for (const el of form.querySelectorAll('.err')) el.textContent = '';
  }

  function showFieldError(name, text) {
    const el = form.querySelector(`[name="${CSS.escape(name)}"]`) || adv;
    el.setAttribute('aria-invalid', 'true');
    const err = document.getElementById(`${el.id}-err`);
    if (err) err.textContent = text;
    if (el === adv) document.getElementById('advanced').open = true;
    el.focus();
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors();
    const verb = task.value;
    const { options: extra, errors } = parseOptions(adv.value);
    if (errors.length) { showFieldError('advanced', errors.join('; ')); return; }
    const options = {};
    const num = (el) => (el.value.trim() === '' ? undefined : Number(el.value));
    if (verb === 'fit-ls') {
      options.kind = kind.value;
      options.target = target.value;
      if (target.value === 'dpd') options.pa = pa.value;
    } else {
      options.model = family.value;
      if (num(hidden) !== undefined && family.value !== 'gmp') options.hidden = num(hidden);
      if (num(layers) !== undefined) options.layers = num(layers);
      if (preset.value) options.preset = preset.value;
      if (num(epochs) !== undefined) options.epochs = num(epochs);
      if (verb === 'train-dpd') options.pa = pa.value;
      options.preview_every_batches = previewMode.value === 'batch' ? num(previewBatches) ?? 100 : null;
    }
    // a setting given twice, by its field and in the advanced settings, with two values: say so
    // rather than let one win unseen (an advanced key the form leaves unset, or sets alike, is kept)
    // (a field left empty, and the batch count's default 100 when its field is empty, are not given;
    // names compare in any case, as dpd reads them)
    const given = (k) => options[k] != null && options[k] !== '' && (k !== 'preview_every_batches' || num(previewBatches) !== undefined);
    const twice = Object.keys(extra).filter((k) => given(k) && String(options[k]).toLowerCase() !== String(extra[k]).toLowerCase());
    if (twice.length) {
      showFieldError('advanced', twice.map((k) => `${k}: the form says ${options[k]} and the advanced settings say ${extra[k]}; keep one`).join('; '));
      return;
    }
    Object.assign(options, extra);
    // the same request again (a reply lost on the way) keeps its key, so it makes one run; another
    // request gets a new key (the server refuses a key reused for another request)
    const asked = JSON.stringify([verb, dataset.value, options]);
    if (asked !== lastAsked) idem = uuid();
    lastAsked = asked;
    const body = { verb, dataset: dataset.value, options, idempotency_key: idem };
    submit.disabled = true;
    try {
      const run = await api.post('/runs', body);
      idem = uuid();
      ctx.go(`#/run/${run.id}`);
    } catch (e) {
      msg.append(errorBanner(e));
      if (e.field) showFieldError(e.field in options && !form.querySelector(`[name="${CSS.escape(e.field)}"]`) ? 'advanced' : e.field, e.message);
    } finally {
      submit.disabled = false;
    }
  });
}
