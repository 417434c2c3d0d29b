// The events of a message reader or writer, and the base classes the framed readers and writers
// build on (framedMessages.ts): what vscode-jsonrpc's Emitter, AbstractMessageReader and
// AbstractMessageWriter do, the same way, so that none of that CommonJS package has to be
// bundled. The reader and writer still are vscode-jsonrpc's MessageReader and MessageWriter
// (the interfaces: types only), so its MessageConnection can run over them too (the tests do).
import type { DataCallback, Disposable, Event, Message, PartialMessageInfo } from 'vscode-jsonrpc/node';

/**
 * Listeners of one event. `fire` calls each listener added before it, in order; a listener that
 * throws is reported on the console and the others still run. After dispose, fire does nothing.
 */
export class Emitter<T> {
  private listeners: ((event: T) => unknown)[] | undefined;
  private subscribe: Event<T> | undefined;

  get event(): Event<T> {
    this.subscribe ??= (listener: (e: T) => unknown, thisArgs?: unknown, disposables?: Disposable[]) => {
      const bound = thisArgs === undefined ? listener : (e: T) => listener.call(thisArgs, e);
      (this.listeners ??= []).push(bound);
      const result: Disposable = {
        dispose: () => {
          const at = this.listeners?.indexOf(bound) ?? -1;
          if (at >= 0) this.listeners!.splice(at, 1);
          result.dispose = () => undefined;
        },
      };
      if (Array.isArray(disposables)) disposables.push(result);
      return result;
    };
    return this.subscribe;
  }

  fire(event: T): void {
    for (const listener of this.listeners?.slice() ?? []) {
      try {
        listener(event);
      } catch (error) {
        console.error(error);
      }
    }
  }

  dispose(): void {
    this.listeners = undefined;
  }
}

function asError(error: unknown, who: 'Reader' | 'Writer'): Error {
  if (error instanceof Error) return error;
  const message = (error as { message?: unknown } | null | undefined)?.message;
  return new Error(`${who} received error. Reason: ${typeof message === 'string' ? message : 'unknown'}`);
}

/** The error and close events of a message reader or writer. */
abstract class MessageEvents<E> {
  protected readonly errorEmitter = new Emitter<E>();
  private readonly closeEmitter = new Emitter<void>();
  readonly onError: Event<E> = this.errorEmitter.event;
  readonly onClose: Event<void> = this.closeEmitter.event;
  /** The close event was fired (at most once). */
  protected closed = false;

  /** Fires the close event, once: later calls do nothing. */
  protected fireClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.closeEmitter.fire(undefined);
  }
  dispose(): void {
    this.errorEmitter.dispose();
    this.closeEmitter.dispose();
  }
}

/** A message reader's error, close and partial-message events. */
export abstract class MessageReaderBase extends MessageEvents<Error> {
  /** Never fired: a frame is read whole, or dropped. */
  readonly onPartialMessage: Event<PartialMessageInfo> = new Emitter<PartialMessageInfo>().event;

  abstract listen(callback: DataCallback): Disposable;

  protected fireError(error: unknown): void {
    this.errorEmitter.fire(asError(error, 'Reader'));
  }
}

/** A message writer's error and close events. */
export abstract class MessageWriterBase extends MessageEvents<[Error, Message | undefined, number | undefined]> {
  abstract write(msg: Message): Promise<void>;
  abstract end(): void;

  protected fireError(error: unknown, message?: Message, count?: number): void {
    this.errorEmitter.fire([asError(error, 'Writer'), message, count]);
  }
}
