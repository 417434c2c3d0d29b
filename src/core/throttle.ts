// Calls `fn` at most once per `ms`, and always after the last poke.

export class Throttle {
  private timer: NodeJS.Timeout | null = null;
  private last = 0;

  constructor(
    private readonly ms: number,
    private readonly fn: () => void,
  ) {}

  poke(): void {
    if (this.timer) return;
    const wait = Math.max(0, this.last + this.ms - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.last = Date.now();
      this.fn();
    }, wait);
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
