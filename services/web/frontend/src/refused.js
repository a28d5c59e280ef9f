// Components the renderer refuses, shown as placeholders instead of losing the whole revision.

import { componentSchemas } from './generated/catalog-schemas.js';
import { report } from './api.js';

// The renderer refuses a whole update when one component fails its props schema. The compiler accepted them all,
// so a refusal here means the two checks disagree on some value: that component is shown as a placeholder, as
// the compiler would have, and the rest of the revision is displayed. Null when every component passes.
export function withPlaceholders(message) {
  const update = message.updateComponents;
  if (!update) return null;
  let replaced = 0;
  const components = update.components.map((component) => {
    const { id, component: type, ...props } = component;
    if (componentSchemas[type]?.safeParse(props).success) return component;
    replaced += 1;
    const children = Array.isArray(component.children) ? component.children.filter((c) => typeof c === 'string') : [];
    return { id, component: 'Placeholder', code: 'CLIENT_REFUSED', children,
      reason: `This page could not display this ${type || 'element'}.` };
  });
  return replaced ? { ...message, updateComponents: { ...update, components } } : null;
}

// Whether `processor` took the message, as it is or with the components it refuses as placeholders; a refusal is
// reported to web, never thrown.
export function applyMessage(processor, message) {
  for (const candidate of [message, withPlaceholders(message)]) {
    if (!candidate) continue;
    try {
      processor.processMessage(candidate);
      return true;
    } catch (error) {
      report('a2ui-message-refused', error.message);
    }
  }
  return false;
}
