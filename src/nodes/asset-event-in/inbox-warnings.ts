/** What asset-event-in says when an inbox goes with the node, or stays in Redis for the other copies. */
import type { DeliveryHooks } from './delivery';

/** A removed node's own inbox went: how many entries not acknowledged went with it. */
export function warnLost(lost: number, hooks: Pick<DeliveryHooks, 'warn' | 't'>): void {
  if (lost > 0) hooks.warn(hooks.t('inbox.removed', 'node removed: its inbox went with __count__ entries not acknowledged', { count: lost }));
}

/** A shared inbox stays when one copy removes the node: how many entries stay, and where. */
export async function warnKept(kept: Promise<{ count: number; keys: string }>, hooks: Pick<DeliveryHooks, 'warn' | 't'>): Promise<void> {
  try {
    const { count, keys } = await kept;
    if (count > 0) hooks.warn(hooks.t('inbox.removed-shared', 'node removed: __count__ entries not acknowledged stay in Redis for it; other copies running this node still deliver them; if none does, delete the keys __keys__ by hand', { count, keys }));
  } catch (err) {
    hooks.warn(hooks.t('inbox.removed-shared-unknown', 'node removed: its entries not acknowledged stay in Redis for the other copies (they could not be counted: __message__)', { message: (err as Error).message }));
  }
}
