// A bound on how often one participant id may point the leader at a new
// endpoint. The nodes dial whatever endpoint a participant registered (for
// PREPARE, DECISION and the status question), so each new endpoint is a
// connection from the leader to an address of the registrant's choosing:
// with no bound, one identity could walk the leader over every port of a
// network. A participant that restarts on a new port re-registers once per
// start, far below the bound; a registration that repeats the endpoint it
// has costs nothing and is not counted.

/** New endpoints one participant id may register per window. */
export const ENDPOINT_CHANGES_MAX = 20;
export const ENDPOINT_CHANGE_WINDOW_MS = 60_000;
/** Ids whose recent changes are remembered at once; past it the one idle longest is dropped. */
const IDS_TRACKED_MAX = 10_000;

export class EndpointChanges {
  /** Per id, the instants of its changes within the window, oldest first; Map order is least recently changed first. */
  private readonly recent = new Map<string, number[]>();

  /**
   * Counts a change of `id`'s endpoint at nowMs; false (nothing counted) when it already had ENDPOINT_CHANGES_MAX in
   * the window.
   */
  allow(id: string, nowMs: number): boolean {
    const times = (this.recent.get(id) ?? []).filter((atMs) => nowMs - atMs < ENDPOINT_CHANGE_WINDOW_MS);
    if (times.length >= ENDPOINT_CHANGES_MAX) {
      this.recent.set(id, times);
      return false;
    }
    times.push(nowMs);
    this.recent.delete(id);
    this.recent.set(id, times);
    if (this.recent.size > IDS_TRACKED_MAX) this.recent.delete(this.recent.keys().next().value as string);
    return true;
  }
}
