// Closing the window while a transfer runs asks first: the transfer would be cancelled (the host
// cancels running jobs on quit) and resumes only from what was downloaded. Pure apart from the
// injected confirm and close, so it is tested without Electron.

export interface CloseGuardOptions {
  /** a clone, apply or bundle is running now */
  transferring: () => boolean;
  /** asks the user; true: close anyway */
  confirm: () => Promise<boolean>;
  /** closes the window for real (the guard lets that close through) */
  close: () => void;
}

export class CloseGuard {
  private asking = false;
  private allowed = false;

  constructor(private readonly options: CloseGuardOptions) {}

  /**
   * The window's `close` event: returns true when the close may go on; otherwise the caller
   * prevents it and the guard asks (once, however often the user clicks close meanwhile).
   */
  onClose(): boolean {
    if (this.allowed || !this.options.transferring()) return true;
    if (!this.asking) void this.ask();
    return false;
  }

  private async ask(): Promise<void> {
    this.asking = true;
    let close = false;
    try {
      close = await this.options.confirm();
    } catch {
      close = false;
    } finally {
      this.asking = false;
    }
    if (!close) return;
    this.allowed = true;
    this.options.close();
  }
}
