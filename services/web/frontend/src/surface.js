// The trusted surface stream (host → web → here): A2UI messages into the renderer, host events to the app.
// EventSource resumes by itself with Last-Event-ID after a disconnect; a gap the host cannot fill
// arrives as snapshot-required and then a fresh snapshot, which replaces the surface. Every action a block
// dispatches comes out of the processor's action channel to handlers.onAction.

import { MessageProcessor } from '@a2ui/web_core/v0_9';
import '@a2ui/lit/v0_9';
import { captions, catalog, surfaceState, windowKey } from './components.js';
import { applyMessage } from './refused.js';
import { apiPath } from './api.js';
import { showInEarlierAnswers } from './earlier-answer.js';

// Windows by `<resource>|<node>|<binding prop>|<offset>`, and those the host said it is sending after a commit: a
// block finds its first rows here (or waits for them) instead of asking for them.
function noteWindows(message) {
  if (message.createSurface) {  // a new surface, or a snapshot replacing it
    surfaceState.windows.clear();
    surfaceState.coming = new Set();
  }
  const update = message.updateDataModel;
  if (!update) return;
  if (update.path === '/firstWindows') {
    const listed = new Set(update.value || []);
    const dropped = [...surfaceState.coming].filter((key) => !listed.has(key));
    surfaceState.coming = listed;
    for (const key of dropped) surfaceState.notComing(key);  // it will not come: the block asks itself
  } else if (update.path?.endsWith('/window') && update.value) {
    const w = update.value;
    const key = windowKey(update.path.slice(0, -'/window'.length), w.node, w.prop, w.offset);
    surfaceState.windows.set(key, w);
    surfaceState.coming.delete(key);
    surfaceState.settled(key);
    surfaceState.arrivals.dispatchEvent(new CustomEvent('window', { detail: key }));
  }
}

export class SurfaceView {
  constructor(element, handlers) {
    this.element = element;
    this.handlers = handlers;
    this.processor = new MessageProcessor([catalog], (action) => this.handlers.onAction(action));
    this.surfaceId = '';
    this.lastSequence = 0;
    captions.addEventListener('change', () => this.showCaption());
  }

  // The answer's caption, once, under it: the page draws it, so no proposal can leave it out or move it.
  showCaption() {
    const below = this.element.querySelector('#answer-caption');
    if (below) captions.drawInto(below);
  }

  connect(delay = 1000) {
    // Resume where we were: EventSource sends Last-Event-ID itself on its own retries; after it gave up
    // (a non-200 answer, e.g. web restarted), a new one starts from our last cursor.
    const after = this.lastCursor ? `?after=${encodeURIComponent(this.lastCursor)}` : '';
    this.source = new EventSource(apiPath(`/api/surface/stream${after}`));
    this.source.onmessage = (event) => {
      if (event.lastEventId) this.lastCursor = event.lastEventId;
      this.receive(JSON.parse(event.data));
    };
    this.source.onopen = () => { delay = 1000; this.handlers.onConnection?.(true); };
    this.source.onerror = () => {
      if (this.source.readyState !== EventSource.CLOSED) return;  // the browser is already retrying
      this.handlers.onConnection?.(false);
      setTimeout(() => this.handlers.reopen().then(() => this.connect(Math.min(delay * 2, 30000)),
        () => this.connect(Math.min(delay * 2, 30000))), delay);
    };
  }

  receive(envelope) {
    if (envelope.error) {
      this.handlers.onError?.(envelope.error);
      return;
    }
    this.lastSequence = envelope.sequence;
    if (envelope.kind !== 'a2ui') {
      if (envelope.revision_id) surfaceState.revisionId = envelope.revision_id;
      this.handlers.onHostEvent?.(envelope.kind, envelope.event, envelope);
      return;
    }
    const message = envelope.message;
    noteWindows(message);
    showInEarlierAnswers(message);  // a window an earlier answer of the conversation asked for
    if (message.createSurface && this.processor.model.getSurface(message.createSurface.surfaceId)) {
      applyMessage(this.processor, { version: message.version, deleteSurface: {
        surfaceId: message.createSurface.surfaceId } });  // a snapshot replaces what was shown
    }
    if (!applyMessage(this.processor, message)) return;
    // Commands are bound to the revision on screen: it changes only once its components are shown.
    if (envelope.revision_id) surfaceState.revisionId = envelope.revision_id;
    if (message.createSurface) this.show(message.createSurface.surfaceId);
    if (message.updateComponents) this.handlers.onRendered?.(envelope.revision_id);
  }

  show(surfaceId) {
    this.surfaceId = surfaceId;
    const surface = this.processor.model.getSurface(surfaceId);
    let view = this.element.querySelector('a2ui-surface');
    if (!view) {
      view = document.createElement('a2ui-surface');
      const loading = document.createElement('div');
      loading.slot = 'loading';
      loading.className = 'surface-loading';
      loading.textContent = 'Loading the answer…';
      view.append(loading);
      const caption = document.createElement('div');
      caption.id = 'answer-caption';
      caption.className = 'answer-caption';
      this.element.replaceChildren(view, caption);
      this.showCaption();
    }
    view.surface = surface;
  }
}
