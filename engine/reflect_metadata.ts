/**
 * A minimal implementation of the `Reflect` metadata API (the subset of the `reflect-metadata` proposal that
 * `tsyringe`, a dependency of `@peculiar/x509`, needs at load time).
 *
 * `@peculiar/x509` refuses to load unless `Reflect.getMetadata` exists. The project does not depend on the
 * `reflect-metadata` package, so {@link installReflectMetadata} provides the few functions it uses
 * (`defineMetadata`, `getMetadata`, `getOwnMetadata`, `hasMetadata`, `hasOwnMetadata`, `metadata`). It never
 * replaces an existing implementation: if a real polyfill is already loaded, it is left untouched.
 *
 * @module
 */

type MetadataTarget = object;
type MetadataKey = unknown;
type PropertyKeyOrUndefined = string | symbol | undefined;

interface ReflectMetadataApi {
  defineMetadata(
    key: MetadataKey,
    value: unknown,
    target: MetadataTarget,
    property?: PropertyKeyOrUndefined,
  ): void;
  getMetadata(key: MetadataKey, target: MetadataTarget, property?: PropertyKeyOrUndefined): unknown;
  getOwnMetadata(key: MetadataKey, target: MetadataTarget, property?: PropertyKeyOrUndefined): unknown;
  hasMetadata(key: MetadataKey, target: MetadataTarget, property?: PropertyKeyOrUndefined): boolean;
  hasOwnMetadata(key: MetadataKey, target: MetadataTarget, property?: PropertyKeyOrUndefined): boolean;
  metadata(
    key: MetadataKey,
    value: unknown,
  ): (target: MetadataTarget, property?: PropertyKeyOrUndefined) => void;
}

/**
 * Installs the metadata functions on the global `Reflect` object unless `Reflect.getMetadata` already exists.
 * Idempotent. Must run before `@peculiar/x509` is first evaluated (load it with a dynamic `import()` after
 * calling this).
 */
export function installReflectMetadata(): void {
  const reflect = Reflect as unknown as Partial<ReflectMetadataApi>;
  if (typeof reflect.getMetadata === "function") return;

  const store = new WeakMap<MetadataTarget, Map<PropertyKeyOrUndefined, Map<MetadataKey, unknown>>>();
  const ownMap = (target: MetadataTarget, property: PropertyKeyOrUndefined, create: boolean) => {
    let byProperty = store.get(target);
    if (!byProperty) {
      if (!create) return undefined;
      byProperty = new Map();
      store.set(target, byProperty);
    }
    let byKey = byProperty.get(property);
    if (!byKey) {
      if (!create) return undefined;
      byKey = new Map();
      byProperty.set(property, byKey);
    }
    return byKey;
  };
  const find = (key: MetadataKey, target: MetadataTarget, property: PropertyKeyOrUndefined) => {
    for (let t: MetadataTarget | null = target; t !== null; t = Object.getPrototypeOf(t)) {
      const map = ownMap(t, property, false);
      if (map?.has(key)) return { found: true, value: map.get(key) };
    }
    return { found: false, value: undefined };
  };

  const api: ReflectMetadataApi = {
    defineMetadata(key, value, target, property) {
      ownMap(target, property, true)!.set(key, value);
    },
    getMetadata(key, target, property) {
      return find(key, target, property).value;
    },
    getOwnMetadata(key, target, property) {
      return ownMap(target, property, false)?.get(key);
    },
    hasMetadata(key, target, property) {
      return find(key, target, property).found;
    },
    hasOwnMetadata(key, target, property) {
      return ownMap(target, property, false)?.has(key) ?? false;
    },
    metadata(key, value) {
      return (target, property) => api.defineMetadata(key, value, target, property);
    },
  };
  for (const [name, fn] of Object.entries(api)) {
    Object.defineProperty(Reflect, name, {
      value: fn,
      writable: true,
      configurable: true,
      enumerable: false,
    });
  }
}
