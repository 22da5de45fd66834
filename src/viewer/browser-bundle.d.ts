/**
 * The viewer's browser code (src/viewer/browser) bundled into one script by
 * scripts/build-viewer.mjs, which writes browser-bundle.js beside this file.
 */
export declare const viewerScript: string;
