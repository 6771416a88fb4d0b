/**
 * The DAM sidebar's routes for the at-least-once inbox of each running asset-event-in:
 *
 *   GET    dam-assets/event-in/:id/parked                  asset-server.read   counts and parked entries
 *   POST   dam-assets/event-in/:id/parked/:entry/deliver   asset-server.write  deliver it again
 *   DELETE dam-assets/event-in/:id/parked/:entry           asset-server.write  discard it
 *
 * 404 when no asset-event-in with this id runs with Delivery "at least once", or (actions) when
 * the entry is not parked there. The entries are what the callback carried: no secret.
 */
import { runningDelivery } from '../nodes/asset-event-in/delivery';

type Guard = (req: any, res: any, next: () => void) => void;

export function registerInboxRoutes(app: any, read: Guard, write: Guard): void {
  const deliveryOf = (req: any, res: any) => {
    const delivery = runningDelivery(String(req.params.id));
    if (!delivery) res.status(404).json({ error: 'no asset-event-in with this id runs with Delivery "at least once"' });
    return delivery;
  };

  app.get('/dam-assets/event-in/:id/parked', read, async (req: any, res: any) => {
    const delivery = deliveryOf(req, res);
    if (!delivery) return;
    try {
      res.json({ ok: true, counts: delivery.counts() ?? null, parked: await delivery.parkedEntries() });
    } catch (err) {
      res.json({ ok: false, error: { kind: 'inbox', message: (err as Error).message } });
    }
  });

  const action = (act: 'deliverAgain' | 'discard') => async (req: any, res: any) => {
    const delivery = deliveryOf(req, res);
    if (!delivery) return;
    try {
      if (await delivery[act](String(req.params.entry))) res.json({ ok: true });
      else res.status(404).json({ error: 'no parked entry with this id' });
    } catch (err) {
      res.json({ ok: false, error: { kind: 'inbox', message: (err as Error).message } });
    }
  };
  app.post('/dam-assets/event-in/:id/parked/:entry/deliver', write, action('deliverAgain'));
  app.delete('/dam-assets/event-in/:id/parked/:entry', write, action('discard'));
}
