// The provider peers in one import.
export * from './base.ts';
export * from './twilio.ts';
export * from './vonage.ts';
export * from './slack.ts';
export * from './teams.ts';
export * from './discord.ts';
export * from './telegram.ts';
export * from './mattermost.ts';
export * from './google-chat.ts';
export * from './http-gateway.ts';
