// One tick a second, only while some view shows a countdown; no timer at all otherwise.

export class Countdown {
  private timer: NodeJS.Timeout | null = null;
  private readonly listeners = new Set<() => void>();

  onTick(listener: () => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** Ticks while `active` is true. */
  set(active: boolean): void {
    if (active && !this.timer) {
      // Align ticks to whole seconds so "0:42" turns into "0:41" when it should.
      const align = 1000 - (Date.now() % 1000);
      this.timer = setTimeout(() => this.tick(), align);
    } else if (!active && this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  dispose(): void {
    this.set(false);
    this.listeners.clear();
  }

  private tick(): void {
    this.timer = setTimeout(() => this.tick(), 1000 - (Date.now() % 1000) || 1000);
    for (const l of this.listeners) l();
  }
}
