import { env } from "cloudflare:workers";
import { describe, expect, test } from "vitest";
import { DEFAULT_RECOVERY_SECONDS, recoveryWindowMs } from "../../src/durable/session/object-state";
import { DEFAULT_SESSION_FULL_BYTES, sessionFullBytes } from "../../src/durable/session/schema";
import { blobPolicy, DEFAULT_BLOB_MIN_BYTES } from "../../src/durable/session/session-blobs";
import { checkedNumberSetting, numberSetting } from "../../src/durable/settings";

describe("number settings from the environment", () => {
  test("a whole number at least the minimum is taken, capped at the maximum", () => {
    expect(numberSetting("12", 5)).toBe(12);
    expect(numberSetting(" 12 ", 5)).toBe(12);
    expect(numberSetting("0", 5)).toBe(0);
    expect(numberSetting("1000", 1, { min: 1, max: 64 })).toBe(64);
  });

  test("unset, blank, not a number, below the minimum or a fraction: the default", () => {
    for (const value of [undefined, "", "   ", "x", "NaN", "Infinity", "-1", "0.5"]) {
      expect(numberSetting(value, 5), String(value)).toBe(5);
    }
    expect(numberSetting("0", 5, { min: 1 })).toBe(5);
  });

  test("a setting that takes fractions takes them, but not a blank or a negative", () => {
    expect(numberSetting("0.05", 7, { whole: false })).toBe(0.05);
    expect(numberSetting("", 7, { whole: false })).toBe(7);
    expect(numberSetting("-0.5", 7, { whole: false })).toBe(7);
  });

  test("a blank recovery window keeps deleted sessions for the default week, not for no time at all", () => {
    expect(recoveryWindowMs({ RECOVERY_WINDOW_SECONDS: "" })).toBe(DEFAULT_RECOVERY_SECONDS * 1000);
    expect(recoveryWindowMs({ RECOVERY_WINDOW_SECONDS: "0" })).toBe(0);
    expect(recoveryWindowMs({ RECOVERY_WINDOW_SECONDS: "0.2" })).toBe(200);
  });

  test("a setting whose default would do harm is misconfigured when set to what it does not take", () => {
    const shards = { min: 1, max: 64 };
    expect(checkedNumberSetting("SHARDS", undefined, 1, shards)).toBe(1);
    expect(checkedNumberSetting("SHARDS", " ", 1, shards)).toBe(1);
    expect(checkedNumberSetting("SHARDS", " 4 ", 1, shards)).toBe(4);
    expect(checkedNumberSetting("SHARDS", "1000", 1, shards)).toBe(64);
    for (const value of ["0", "-4", "four", "2.5", "Infinity"]) {
      expect(() => checkedNumberSetting("SHARDS", value, 1, shards), value).toThrow(
        expect.objectContaining({ code: "misconfigured", message: expect.stringContaining("SHARDS") }),
      );
    }
    expect(() => recoveryWindowMs({ RECOVERY_WINDOW_SECONDS: "7d" })).toThrow(/RECOVERY_WINDOW_SECONDS/);
  });

  test("byte settings need at least one byte, BLOB_MIN_BYTES at least 1 KiB", () => {
    expect(sessionFullBytes({ SESSION_FULL_BYTES: "0" })).toBe(DEFAULT_SESSION_FULL_BYTES);
    expect(sessionFullBytes({ SESSION_FULL_BYTES: "5000000" })).toBe(5_000_000);
    const bucket = env.BLOBS as R2Bucket;
    expect(blobPolicy({ BLOBS: bucket, BLOB_MIN_BYTES: "" })).toEqual({ minBytes: DEFAULT_BLOB_MIN_BYTES });
    expect(blobPolicy({ BLOBS: bucket, BLOB_MIN_BYTES: "1024" })).toEqual({ minBytes: 1024 });
    // A value no longer than a reference would be stored as one, and a fork would not see its blob.
    for (const small of ["1", "64", "1023"]) {
      expect(blobPolicy({ BLOBS: bucket, BLOB_MIN_BYTES: small })).toEqual({
        minBytes: DEFAULT_BLOB_MIN_BYTES,
      });
    }
    expect(blobPolicy({ BLOB_MIN_BYTES: "1024" })).toBeUndefined();
  });
});
