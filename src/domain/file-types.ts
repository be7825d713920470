/**
 * Blocked file names and declared types, and the content type to store. Pure module: no I/O.
 *
 * Policy: this service never stores anything a browser would run, or a user would run by
 * opening it: HTML (and XHTML), SVG, JavaScript, shell and other scripts, native executables.
 * Three checks, each of which alone refuses an upload:
 *   - sniffContent() (src/uploads/sniffing/sniff-content.ts): the first bytes of the content
 *     (whatever the name or declared type say);
 *   - checkNameAndType(): the file name's extension and the client's declared Content-Type;
 *   - resolveContentType() never yields an active type (HTML, SVG, XML, script, ...), even when
 *     handed one, so what is served is inert whatever slipped through.
 *
 * checkNameAndType() blocks by the last extension (lower case; trailing dots, blanks and
 * '::$DATA' dropped as Windows does), with the reason in brackets:
 *   - [html] html htm xhtml xht shtml mht mhtml chm: rendered by a browser or the Windows help
 *     viewer, which run their script;
 *   - [svg] svg svgz: an image format that carries script;
 *   - [javascript] js mjs cjs jsx: run by browsers, and by Windows Script Host on double-click;
 *   - [shell script] sh bash zsh csh ksh command tool bat cmd ps1 psm1 psd1 ps1xml psc1:
 *     shell, batch and PowerShell scripts (.command/.tool run in macOS Terminal when opened);
 *   - [script] py pyw pyz pyzw pyc pyo pl rb rbw php phtml phar php3-php7 au3 ahk: interpreted
 *     programs their installed interpreter (Python launcher, Perl, Ruby, AutoIt, AutoHotkey) runs
 *     when opened, and PHP that a web server would execute;
 *   - [executable] exe dll com scr msi msp pif cpl msc elf so dylib app pkg class jar jnlp apk
 *     vbs vbe jse wsf wsh wsc sct hta reg gadget xll application xbap msix msixbundle appx
 *     appxbundle appinstaller: native programs, libraries, installers and app packages, Java,
 *     Windows Script Host and scriptlet files, registry imports, control panel items, ClickOnce;
 *   - [shortcut] lnk url website library-ms searchconnector-ms appref-ms settingcontent-ms
 *     desktop scf webloc inetloc fileloc: launchers that open a program, a command line or a
 *     remote location (WebDAV/SMB, leaking credentials) when opened or even when their folder is
 *     shown (.scf, .library-ms, .searchconnector-ms);
 *   - [macro document] docm dotm xlsm xltm xlam xla pptm potm ppam ppsm sldm: macro-enabled
 *     Office documents and add-ins, whose macros run once the user enables them.
 * Declared Content-Types of the same kinds are blocked as well (BLOCKED_TYPES below).
 * Decisions: '.ts' is NOT blocked (it is also an MPEG transport stream, a video format);
 * '.jar', '.apk' and '.class' ARE blocked by name (runnable packages/code that users open, like
 * '.exe'), though a jar or apk renamed to '.zip' passes as an inert application/zip. Legacy Office
 * documents (.doc, .xls, .ppt) can hold macros too but are everyday files and stay allowed.
 */

/** The type plain text is stored as (sniffContent() labels text so, too). */
export const TEXT_PLAIN = 'text/plain; charset=utf-8';

// ---------------------------------------------------------------------------------------
// Names and declared types

const BLOCKED_EXTENSIONS: Record<string, string> = {};
function blockExtensions(reason: string, extensions: string): void {
  for (const extension of extensions.split(' ')) BLOCKED_EXTENSIONS[extension] = reason;
}
blockExtensions('html', 'html htm xhtml xht shtml mht mhtml chm');
blockExtensions('svg', 'svg svgz');
blockExtensions('javascript', 'js mjs cjs jsx');
blockExtensions('shell script', 'sh bash zsh csh ksh command tool bat cmd ps1 psm1 psd1 ps1xml psc1');
blockExtensions('script', 'py pyw pyz pyzw pyc pyo pl rb rbw php phtml phar php3 php4 php5 php7 au3 ahk');
blockExtensions(
  'executable',
  'exe dll com scr msi msp pif cpl msc elf so dylib app pkg class jar jnlp apk vbs vbe jse wsf wsh wsc sct hta reg gadget xll application xbap msix msixbundle appx appxbundle appinstaller',
);
blockExtensions('shortcut', 'lnk url website library-ms searchconnector-ms appref-ms settingcontent-ms desktop scf webloc inetloc fileloc');
blockExtensions('macro document', 'docm dotm xlsm xltm xlam xla pptm potm ppam ppsm sldm');

const BLOCKED_TYPES: Record<string, string> = {};
function blockTypes(reason: string, types: string): void {
  for (const type of types.split(' ')) BLOCKED_TYPES[type] = reason;
}
blockTypes('html', 'text/html application/xhtml+xml application/vnd.wap.xhtml+xml application/x-mimearchive application/vnd.ms-htmlhelp');
blockTypes('svg', 'image/svg+xml image/svg-xml');
blockTypes(
  'javascript',
  'text/javascript application/javascript application/x-javascript application/ecmascript application/x-ecmascript text/ecmascript text/x-javascript text/x-ecmascript text/jscript text/livescript text/javascript1.0 text/javascript1.1 text/javascript1.2 text/javascript1.3 text/javascript1.4 text/javascript1.5 text/jsx text/babel',
);
blockTypes(
  'shell script',
  'application/x-sh text/x-sh application/x-shellscript text/x-shellscript application/x-csh text/x-csh application/x-zsh application/x-ksh application/x-bat application/bat application/x-msdos-batch text/x-msdos-batch application/x-powershell',
);
blockTypes(
  'executable',
  'application/x-msdownload application/x-msdos-program application/x-dosexec application/vnd.microsoft.portable-executable application/x-ms-dos-executable application/x-executable application/x-elf application/x-sharedlib application/x-mach-binary application/x-mach-o-executable application/x-msi application/x-ms-installer application/x-ole-storage application/hta text/vbscript application/x-vbscript application/java-archive application/x-java-archive application/java-vm application/x-java-applet application/vnd.android.package-archive application/x-ms-shortcut application/x-ms-application application/msix application/msixbundle application/appx application/appxbundle application/appinstaller application/x-java-jnlp-file',
);

blockTypes(
  'script',
  'text/x-python application/x-python application/x-python-code text/x-script.python text/x-perl application/x-perl text/x-ruby application/x-ruby text/x-php application/x-php application/x-httpd-php application/x-httpd-php-source',
);
blockTypes('shortcut', 'application/x-mswinurl application/internet-shortcut application/x-url application/x-desktop application/x-ms-appref');
blockTypes(
  'macro document',
  'application/vnd.ms-word.document.macroenabled.12 application/vnd.ms-word.template.macroenabled.12 application/vnd.ms-excel.sheet.macroenabled.12 application/vnd.ms-excel.template.macroenabled.12 application/vnd.ms-excel.addin.macroenabled.12 application/vnd.ms-powerpoint.presentation.macroenabled.12 application/vnd.ms-powerpoint.template.macroenabled.12 application/vnd.ms-powerpoint.addin.macroenabled.12 application/vnd.ms-powerpoint.slideshow.macroenabled.12 application/vnd.ms-powerpoint.slide.macroenabled.12',
);

/** The bare type of a Content-Type header value: lower case, parameters and blanks removed; null when absent. */
function bareType(declaredType: string | null): string | null {
  if (declaredType == null) return null;
  const bare = declaredType.split(';', 1)[0]!.trim().toLowerCase();
  return bare.length > 0 ? bare : null;
}

/** The last extension of a file name, lower case, after dropping a directory part and trailing dots and blanks (as Windows does). */
function extensionOf(fileName: string): string | null {
  // '::$DATA' is the NTFS default data stream: 'x.html::$DATA' opens as 'x.html' on Windows.
  const base = (fileName.split(/[\\/]/).pop() ?? '').replace(/(?:[.\s]|::\$data)+$/iu, '');
  const dot = base.lastIndexOf('.');
  return dot >= 0 ? base.slice(dot + 1).trim().toLowerCase() : null;
}

/** A block reason when the file name's extension or the declared type is refused, else null. */
export function checkNameAndType(fileName: string, declaredType: string | null): string | null {
  const extension = extensionOf(fileName);
  if (extension && Object.hasOwn(BLOCKED_EXTENSIONS, extension)) return BLOCKED_EXTENSIONS[extension]!;
  const type = bareType(declaredType);
  if (type && Object.hasOwn(BLOCKED_TYPES, type)) return BLOCKED_TYPES[type]!;
  return null;
}

// ---------------------------------------------------------------------------------------
// Content type to store

const EXTENSION_TYPES: Record<string, string> = {
  txt: TEXT_PLAIN,
  log: TEXT_PLAIN,
  text: TEXT_PLAIN,
  cfg: TEXT_PLAIN,
  conf: TEXT_PLAIN,
  ini: TEXT_PLAIN,
  properties: TEXT_PLAIN,
  toml: TEXT_PLAIN,
  yml: TEXT_PLAIN,
  yaml: TEXT_PLAIN,
  md: 'text/markdown; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  tsv: 'text/tab-separated-values; charset=utf-8',
  json: 'application/json',
  ndjson: 'application/x-ndjson',
  jsonl: 'application/x-ndjson',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  bmp: 'image/bmp',
  ico: 'image/x-icon',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  avif: 'image/avif',
  heic: 'image/heic',
  heif: 'image/heif',
  mp4: 'video/mp4',
  m4v: 'video/mp4',
  mov: 'video/quicktime',
  webm: 'video/webm',
  mkv: 'video/x-matroska',
  avi: 'video/x-msvideo',
  ts: 'video/mp2t',
  wav: 'audio/wav',
  mp3: 'audio/mpeg',
  m4a: 'audio/mp4',
  aac: 'audio/aac',
  ogg: 'audio/ogg',
  oga: 'audio/ogg',
  ogv: 'video/ogg',
  opus: 'audio/ogg',
  flac: 'audio/flac',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tgz: 'application/gzip',
  tar: 'application/x-tar',
  '7z': 'application/x-7z-compressed',
  rar: 'application/vnd.rar',
};

const TYPE_PATTERN = /^(application|audio|font|image|model|text|video)\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/**
 * Whether a bare type may be stored and served: well-formed `type/subtype` of an ordinary top-level
 * type, not blocked, and not a type browsers render actively: XML of any kind (XHTML namespaces and
 * XSLT run script there), HTML/SVG/script (blocked anyway), multipart and message types.
 * application/octet-stream is allowed but uninformative, so it yields to the extension table.
 */
function isServableType(type: string): boolean {
  if (!TYPE_PATTERN.test(type) || Object.hasOwn(BLOCKED_TYPES, type)) return false;
  if (type.endsWith('/xml') || type.endsWith('+xml') || type.endsWith('-xml') || type.includes('xsl')) return false;
  if (type.includes('javascript') || type.includes('ecmascript') || type.includes('html')) return false;
  return true;
}

/**
 * The content type to store and serve: the sniffed type when known; otherwise the declared type
 * when it is servable (see isServableType; parameters are dropped); otherwise by extension from a
 * small table; otherwise application/octet-stream. Never an active type, whatever it is given.
 */
export function resolveContentType(sniffed: string | null, declaredType: string | null, fileName: string): string {
  if (sniffed && isServableType(bareType(sniffed) ?? '')) return sniffed;
  const declared = bareType(declaredType);
  if (declared && declared !== 'application/octet-stream' && isServableType(declared)) return declared;
  const extension = extensionOf(fileName);
  const byExtension = extension && Object.hasOwn(EXTENSION_TYPES, extension) ? EXTENSION_TYPES[extension]! : null;
  return byExtension ?? 'application/octet-stream';
}
