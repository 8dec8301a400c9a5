// The uWebSockets.js package we install falls back, silently, to a slow JavaScript
// implementation when its native binary does not load. Detect that: the module we got must
// be the very object the native binary exports.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export interface NativeCheck {
  native: boolean;
  binary: string;
  reason: string;
}

export function checkUwsNative(): NativeCheck {
  const binary = `uWebSockets.js/binaries/uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  let loaded: unknown;
  try {
    loaded = require('uWebSockets.js');
  } catch (e) {
    return { native: false, binary, reason: `uWebSockets.js does not load: ${(e as Error).message}` };
  }
  try {
    const nativeModule: unknown = require(binary);
    if (nativeModule === loaded) return { native: true, binary, reason: '' };
    return { native: false, binary, reason: 'uWebSockets.js loaded its JavaScript fallback (UWS_USE_FALLBACK is set?)' };
  } catch (e) {
    return { native: false, binary, reason: `the native binary ${binary} does not load: ${(e as Error).message.split('\n')[0]}` };
  }
}
