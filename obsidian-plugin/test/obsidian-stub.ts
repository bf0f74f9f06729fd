// A small stand-in for the `obsidian` module, which exists only inside the app. vitest aliases
// `obsidian` to this file; nothing of ours is replaced. It provides:
//   - requestUrl, over Node's http (so the client really talks HTTP to a test server)
//   - the DOM helpers Obsidian adds to Node/Element (createDiv, empty, addClass, ...), installed on a
//     window by installDomHelpers() (test/setup.ts does it when a DOM environment is active)
//   - a few small classes and values (Events, Notice, Platform, Keymap) for modules that import them

import * as http from "http";

export interface RequestUrlParam {
  url: string;
  method?: string;
  contentType?: string;
  body?: string | ArrayBuffer;
  headers?: Record<string, string>;
  throw?: boolean;
}

export interface RequestUrlResponse {
  status: number;
  headers: Record<string, string>;
  arrayBuffer: ArrayBuffer;
  json: unknown;
  text: string;
}

export function requestUrl(request: RequestUrlParam | string): Promise<RequestUrlResponse> {
  const req: RequestUrlParam = typeof request === "string" ? { url: request } : request;
  const url = new URL(req.url);
  const headers: Record<string, string> = { ...(req.headers ?? {}) };
  if (req.contentType) headers["Content-Type"] = req.contentType;
  const body = req.body === undefined ? undefined
    : typeof req.body === "string" ? Buffer.from(req.body) : Buffer.from(new Uint8Array(req.body));
  if (body) headers["Content-Length"] = String(body.length);
  return new Promise((resolve, reject) => {
    const r = http.request({
      host: url.hostname, port: url.port, path: url.pathname + url.search, method: req.method ?? "GET", headers,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const buf = Buffer.concat(chunks);
        const text = buf.toString("utf8");
        const status = res.statusCode ?? 0;
        const out: RequestUrlResponse = {
          status,
          headers: Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, String(v)])),
          arrayBuffer: buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength),
          get json(): unknown {
            return JSON.parse(text) as unknown;
          },
          text,
        };
        if (status >= 400 && req.throw !== false) reject(new Error(`Request failed, status ${status}`));
        else resolve(out);
      });
      res.on("error", reject);
    });
    r.on("error", reject);
    if (body) r.write(body);
    r.end();
  });
}

export interface EventRef {
  name: string;
  fn: (...data: unknown[]) => unknown;
  owner?: Events;
}

export class Events {
  private handlers = new Map<string, EventRef[]>();
  on(name: string, callback: (...data: unknown[]) => unknown): EventRef {
    const ref = { name, fn: callback, owner: this };
    this.handlers.set(name, [...(this.handlers.get(name) ?? []), ref]);
    return ref;
  }
  off(name: string, callback: (...data: unknown[]) => unknown): void {
    this.handlers.set(name, (this.handlers.get(name) ?? []).filter((r) => r.fn !== callback));
  }
  offref(ref: EventRef): void {
    this.off(ref.name, ref.fn);
  }
  trigger(name: string, ...data: unknown[]): void {
    for (const ref of this.handlers.get(name) ?? []) ref.fn(...data);
  }
}

export class Notice {
  static shown: string[] = [];
  constructor(message: string | DocumentFragment) {
    Notice.shown.push(typeof message === "string" ? message : message.textContent ?? "");
  }
  hide(): void {}
}

export const Platform = {
  isDesktop: true, isMobile: false, isDesktopApp: true, isMobileApp: false, isIosApp: false, isAndroidApp: false,
  isPhone: false, isTablet: false, isMacOS: process.platform === "darwin", isWin: process.platform === "win32",
  isLinux: process.platform === "linux", isSafari: false,
};

export const Keymap = {
  isModEvent(evt?: MouseEvent | KeyboardEvent | null): boolean | "tab" {
    if (!evt) return false;
    return (Platform.isMacOS ? evt.metaKey : evt.ctrlKey) ? "tab" : false;
  },
};

export function setIcon(parent: HTMLElement, iconId: string): void {
  parent.setAttribute("data-icon", iconId);
}

// ---- DOM helpers -------------------------------------------------------------------------------

interface DomElementInfo {
  cls?: string | string[];
  text?: string | DocumentFragment;
  attr?: Record<string, string | number | boolean | null>;
  title?: string;
  parent?: Node;
  value?: string;
  type?: string;
  prepend?: boolean;
  placeholder?: string;
  href?: string;
}

interface HelperWindow {
  Node: { prototype: object };
  Element: { prototype: object };
  HTMLElement: { prototype: object };
  DocumentFragment: { prototype: object };
  document: Document;
}

function applyInfo(el: HTMLElement, o: DomElementInfo | string | undefined): void {
  if (o === undefined) return;
  const info: DomElementInfo = typeof o === "string" ? { text: o } : o;
  if (info.cls !== undefined) {
    const classes = (Array.isArray(info.cls) ? info.cls : info.cls.split(" ")).filter(Boolean);
    el.classList.add(...classes);
  }
  if (info.text !== undefined) {
    if (typeof info.text === "string") el.textContent = info.text;
    else el.appendChild(info.text);
  }
  for (const [k, v] of Object.entries(info.attr ?? {})) {
    if (v === null || v === false) el.removeAttribute(k);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  if (info.title !== undefined) el.title = info.title;
  if (info.value !== undefined) (el as HTMLInputElement).value = info.value;
  if (info.type !== undefined) el.setAttribute("type", info.type);
  if (info.placeholder !== undefined) el.setAttribute("placeholder", info.placeholder);
  if (info.href !== undefined) el.setAttribute("href", info.href);
}

/** Add Obsidian's DOM helpers to a window's prototypes (idempotent). */
export function installDomHelpers(win: HelperWindow): void {
  const nodeProto = win.Node.prototype as Record<string, unknown>;
  if (typeof nodeProto.createEl === "function") return;
  const doc = win.document;

  function createEl(this: Node, tag: string, o?: DomElementInfo | string, cb?: (el: HTMLElement) => void): HTMLElement {
    const el = (this.ownerDocument ?? doc).createElement(tag);
    applyInfo(el, o);
    const info = typeof o === "object" ? o : undefined;
    if (info?.prepend) this.insertBefore(el, this.firstChild);
    else this.appendChild(el);
    cb?.(el);
    return el;
  }
  Object.assign(nodeProto, {
    createEl,
    createDiv(this: Node, o?: DomElementInfo | string, cb?: (el: HTMLElement) => void) {
      return createEl.call(this, "div", o, cb);
    },
    createSpan(this: Node, o?: DomElementInfo | string, cb?: (el: HTMLElement) => void) {
      return createEl.call(this, "span", o, cb);
    },
    empty(this: Node) {
      while (this.firstChild) this.removeChild(this.firstChild);
    },
    detach(this: Node) {
      this.parentNode?.removeChild(this);
    },
    appendText(this: Node, val: string) {
      this.appendChild((this.ownerDocument ?? doc).createTextNode(val));
    },
  });
  Object.assign(win.Element.prototype as Record<string, unknown>, {
    getText(this: Element) {
      return this.textContent ?? "";
    },
    setText(this: Element, val: string | DocumentFragment) {
      if (typeof val === "string") this.textContent = val;
      else {
        this.textContent = "";
        this.appendChild(val);
      }
    },
    addClass(this: Element, ...classes: string[]) {
      this.classList.add(...classes);
    },
    addClasses(this: Element, classes: string[]) {
      this.classList.add(...classes);
    },
    removeClass(this: Element, ...classes: string[]) {
      this.classList.remove(...classes);
    },
    removeClasses(this: Element, classes: string[]) {
      this.classList.remove(...classes);
    },
    toggleClass(this: Element, classes: string | string[], value: boolean) {
      for (const c of Array.isArray(classes) ? classes : [classes]) this.classList.toggle(c, value);
    },
    hasClass(this: Element, cls: string) {
      return this.classList.contains(cls);
    },
    setAttr(this: Element, name: string, value: string | number | boolean | null) {
      if (value === null) this.removeAttribute(name);
      else this.setAttribute(name, String(value));
    },
    getAttr(this: Element, name: string) {
      return this.getAttribute(name);
    },
  });
  Object.assign(win.HTMLElement.prototype as Record<string, unknown>, {
    show(this: HTMLElement) {
      this.hidden = false;
    },
    hide(this: HTMLElement) {
      this.hidden = true;
    },
    toggle(this: HTMLElement, show: boolean) {
      this.hidden = !show;
    },
    isShown(this: HTMLElement) {
      return !this.hidden;
    },
  });
}

// ---- minimal classes, so that modules defining views and modals can be imported -----------------

export class Component {
  load(): void {}
  onload(): void {}
  unload(): void {}
  onunload(): void {}
}

export class Modal extends Component {
  app: unknown;
  modalEl: HTMLElement;
  titleEl: HTMLElement;
  contentEl: HTMLElement;
  constructor(app: unknown) {
    super();
    this.app = app;
    if (typeof document === "undefined") throw new Error("Modal needs a DOM test environment (happy-dom)");
    const doc = document;
    this.modalEl = doc.createElement("div");
    this.titleEl = this.modalEl.appendChild(doc.createElement("div"));
    this.contentEl = this.modalEl.appendChild(doc.createElement("div"));
  }
  open(): void {
    this.onOpen();
  }
  close(): void {
    this.onClose();
  }
  onOpen(): void {}
  onClose(): void {}
}

export class Setting {
  constructor(readonly containerEl: HTMLElement) {}
  setName(): this {
    return this;
  }
  setDesc(): this {
    return this;
  }
  setHeading(): this {
    return this;
  }
  addButton(): this {
    return this;
  }
}

/** Enough of ItemView for views to be opened and driven in happy-dom tests (leaf: { app }). */
export class ItemView extends Component {
  app: unknown;
  leaf: unknown;
  containerEl: HTMLElement;
  contentEl: HTMLElement;
  private cleanups: (() => void)[] = [];
  constructor(leaf: { app?: unknown }) {
    super();
    this.leaf = leaf;
    this.app = leaf.app;
    if (typeof document === "undefined") throw new Error("ItemView needs a DOM test environment (happy-dom)");
    this.containerEl = document.createElement("div");
    this.contentEl = this.containerEl.appendChild(document.createElement("div"));
  }
  registerEvent(ref: EventRef & { owner?: Events }): void {
    this.cleanups.push(() => ref.owner?.offref(ref));
  }
  registerDomEvent(el: HTMLElement, type: string, fn: (evt: Event) => void): void {
    el.addEventListener(type, fn);
    this.cleanups.push(() => el.removeEventListener(type, fn));
  }
  async onOpen(): Promise<void> {}
  async onClose(): Promise<void> {}
  /** Test helper: what Obsidian does when the leaf closes. */
  async close(): Promise<void> {
    for (const fn of this.cleanups.splice(0)) fn();
    await this.onClose();
  }
}

export class TFile {
  path = "";
  get basename(): string {
    return (this.path.split("/").pop() ?? this.path).replace(/\.md$/i, "");
  }
}

export class MarkdownView {}
