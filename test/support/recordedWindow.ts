// The window's side of the notifications (`NotifyIo`), recorded: what was shown, with its buttons
// (a test clicks them), the information messages, the commands run and the `notifications`
// setting. VS Code's own side is src/views/notifier.ts; this one serves the unit tests of the
// burst rule (a fake clock) and the real-daemon test of the budget and the burst (real time).
import type { NotificationLevel } from '../../src/config/settings';
import type { NotifyIo } from '../../src/views/notificationBurst';
import { immediate } from './wait';

export interface Shown {
  /** When it was shown, on the window's clock (ms). */
  at: number;
  text: string;
  buttons: string[];
  /** The person clicks `button`: the notification's promise resolves, and what it runs is run. */
  click(button: string): Promise<void>;
}

export class RecordedWindow implements NotifyIo {
  /** The `notifications` setting; Don't show again sets it to `none`. The shipped value first. */
  setting: NotificationLevel = 'attention';
  readonly shown: Shown[] = [];
  readonly infos: string[] = [];
  readonly ran: { command: string; arg?: { threadId: string } }[] = [];
  constructor(private readonly now: () => number = () => performance.now()) {}
  level(): NotificationLevel {
    return this.setting;
  }
  t(message: string, ...args: (string | number)[]): string {
    return message.replace(/\{(\d+)\}/g, (_, i: string) => String(args[Number(i)]));
  }
  warn(text: string, buttons: string[]): PromiseLike<string | undefined> {
    return new Promise((resolve) => {
      this.shown.push({
        at: this.now(),
        text,
        buttons,
        click: async (button) => {
          resolve(button);
          await immediate();
        },
      });
    });
  }
  info(text: string): void {
    this.infos.push(text);
  }
  run(command: string, arg?: { threadId: string }): void {
    this.ran.push(arg ? { command, arg } : { command });
  }
  silence(): void {
    this.setting = 'none';
  }
}
