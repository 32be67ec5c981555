// Every HTTP route of Herald, in one table: one line per route, its credential rule visible in the
// route module's definition. Handlers stay thin (validate -> service -> response).
import type { RouteDefinition } from '../route.ts';
import * as system from './system.ts';
import * as apiKeys from './api-keys.ts';
import * as notificationTypes from './notification-types.ts';
import * as brandings from './brandings.ts';
import * as senderDomains from './sender-domains.ts';
import * as emailTemplates from './email-templates.ts';
import * as inboxTemplates from './inbox-templates.ts';
import * as smsTemplates from './sms-templates.ts';
import * as chatTemplates from './chat-templates.ts';
import * as httpTemplates from './http-templates.ts';
import * as contacts from './contacts.ts';
import * as preferences from './preferences.ts';
import * as pushSubscriptions from './push-subscriptions.ts';
import * as chatDestinations from './chat-destinations.ts';
import * as inbox from './inbox.ts';
import * as stream from './stream.ts';
import * as emailTransport from './email-transport.ts';
import * as pushTransports from './push-transports.ts';
import * as chatTransport from './chat-transport.ts';
import * as httpTransport from './http-transport.ts';
import * as webPush from './web-push.ts';
import * as auth from './auth.ts';
import * as tenants from './tenants.ts';
import * as mfa from './mfa.ts';
import * as members from './members.ts';
import * as invitations from './invitations.ts';
import * as dataRequests from './data-requests.ts';
import * as staticFiles from '../pages/static.ts';
import * as notifications from './notifications.ts';
import * as metrics from './metrics.ts';
import * as configuration from './configuration.ts';
import * as webhooks from './webhooks.ts';
import * as suppressions from './suppressions.ts';
import * as unsubscribe from '../pages/unsubscribe.ts';
import * as auditLog from './audit-log.ts';
import * as sso from './sso.ts';
import * as consolePages from '../pages/console.ts';
import * as topics from './topics.ts';
import * as broadcasts from './broadcasts.ts';
import * as smsTransport from './sms-transport.ts';
import * as providerCallbacks from './provider-callbacks.ts';

export const routes: RouteDefinition<any, any, any>[] = [
  // system (no credential)
  system.healthz,
  system.readyz,
  system.openapi,
  // service keys (management)
  apiKeys.issue,
  apiKeys.list,
  apiKeys.revoke,
  // notification types (management)
  notificationTypes.create,
  notificationTypes.list,
  notificationTypes.get,
  notificationTypes.remove,
  notificationTypes.channelDefaults,
  notificationTypes.optOutPolicy,
  notificationTypes.variables,
  notificationTypes.restore,
  notificationTypes.putWorkflow,
  notificationTypes.deleteWorkflow,
  notificationTypes.quietHoursBypass,
  // brands (management)
  brandings.create,
  brandings.list,
  brandings.get,
  brandings.remove,
  brandings.values,
  brandings.sender,
  // sender domains (management)
  senderDomains.register,
  senderDomains.list,
  senderDomains.get,
  senderDomains.remove,
  senderDomains.refresh,
  // email templates (management)
  emailTemplates.create,
  emailTemplates.list,
  emailTemplates.render,
  emailTemplates.affectedBy,
  emailTemplates.get,
  emailTemplates.update,
  emailTemplates.remove,
  // inbox templates (management)
  inboxTemplates.create,
  inboxTemplates.list,
  inboxTemplates.get,
  inboxTemplates.update,
  inboxTemplates.remove,
  // sms, chat and http templates (management)
  smsTemplates.create,
  smsTemplates.list,
  smsTemplates.render,
  smsTemplates.get,
  smsTemplates.update,
  smsTemplates.remove,
  chatTemplates.create,
  chatTemplates.list,
  chatTemplates.render,
  chatTemplates.get,
  chatTemplates.update,
  chatTemplates.remove,
  httpTemplates.create,
  httpTemplates.list,
  httpTemplates.render,
  httpTemplates.get,
  httpTemplates.update,
  httpTemplates.remove,
  // contacts (service key), contact tokens (service key), language (either)
  contacts.create,
  contacts.find,
  contacts.bulk,
  contacts.importNdjson,
  contacts.token,
  contacts.get,
  contacts.replace,
  contacts.remove,
  contacts.language,
  contacts.quietHours,
  // preferences (either)
  preferences.get,
  preferences.set,
  // push subscriptions (either)
  pushSubscriptions.create,
  pushSubscriptions.list,
  pushSubscriptions.remove,
  // chat destinations (management)
  chatDestinations.create,
  chatDestinations.list,
  chatDestinations.remove,
  // inbox and its real-time stream (contact token)
  inbox.list,
  inbox.update,
  inbox.readAll,
  stream.open,
  // transports (management) and the web-push public key (any credential of the tenant)
  emailTransport.getEmailTransportRoute,
  emailTransport.putEmailTransportRoute,
  emailTransport.deleteEmailTransportRoute,
  emailTransport.testEmailTransportRoute,
  emailTransport.getEmailFallbackRoute,
  emailTransport.putEmailFallbackRoute,
  emailTransport.deleteEmailFallbackRoute,
  pushTransports.listPushTransportsRoute,
  pushTransports.putPushTransportRoute,
  pushTransports.deletePushTransportRoute,
  pushTransports.testPushTransportRoute,
  chatTransport.listChatTransportsRoute,
  chatTransport.putChatTransportRoute,
  chatTransport.deleteChatTransportRoute,
  chatTransport.testChatTransportRoute,
  httpTransport.getHttpTransportRoute,
  httpTransport.putHttpTransportRoute,
  httpTransport.deleteHttpTransportRoute,
  httpTransport.rotateHttpSecretRoute,
  httpTransport.testHttpTransportRoute,
  webPush.webPushPublicKeyRoute,
  smsTransport.listSmsTransportsRoute,
  smsTransport.putSmsTransportRoute,
  smsTransport.deleteSmsTransportRoute,
  smsTransport.testSmsTransportRoute,
  // SMS providers' callbacks: receipts and inbound messages (the provider's signature, no credential)
  providerCallbacks.twilioCallback,
  providerCallbacks.vonageCallback,
  // sign-up, sign-in and recovery (no credential)
  auth.register,
  auth.login,
  auth.verifyEmail,
  auth.resendVerification,
  auth.requestPasswordReset,
  auth.confirmPasswordReset,
  auth.passwordResetStatus,
  // second factor: the user's own (console user) and the sign-in's second step (no credential)
  mfa.status,
  mfa.enrolTotp,
  mfa.confirmTotp,
  mfa.disableTotp,
  mfa.verify,
  // tenants and sessions (console user; owner-only actions judged by membership in the path's tenant)
  tenants.listTenants,
  tenants.createTenant,
  tenants.updateTenant,
  tenants.archiveTenant,
  tenants.unarchiveTenant,
  tenants.switchSession,
  // members (console user, admin or higher)
  members.listMembers,
  members.changeMemberRole,
  members.removeMember,
  // invitations (console user, admin or higher) and invitation links
  invitations.inviteMember,
  invitations.listInvitations,
  invitations.revokeInvitation,
  invitations.previewInvitation,
  invitations.acceptInvitation,
  invitations.acceptInvitationExisting,
  // data requests (console user, owner)
  dataRequests.fileDataRequest,
  dataRequests.getDataRequest,
  dataRequests.downloadDataExport,
  // static: browser SDK and demo page (no credential)
  staticFiles.sdkClient,
  staticFiles.sdkWidget,
  staticFiles.sdkServiceWorker,
  staticFiles.sdkTypes,
  staticFiles.demoPage,
  staticFiles.demoScript,
  staticFiles.demoStyles,
  // notifications (service key): trigger, event status, activity log
  notifications.triggerNotification,
  notifications.getNotificationEvent,
  notifications.listNotificationEvents,
  notifications.cancelByKey,
  notifications.cancelEvent,
  // Prometheus metrics (the install's metrics token)
  metrics.scrape,
  // configuration as code (management)
  configuration.exportDocument,
  configuration.apply,
  // outbound webhooks (management)
  webhooks.create,
  webhooks.list,
  webhooks.get,
  webhooks.update,
  webhooks.remove,
  webhooks.rotateSecret,
  webhooks.test,
  webhooks.deliveries,
  webhooks.retry,
  // email suppression list (management)
  suppressions.list,
  suppressions.add,
  suppressions.remove,
  // one-click unsubscribe and the hosted preference page (signed link tokens, no credential)
  unsubscribe.unsubscribePage,
  unsubscribe.unsubscribeOneClick,
  unsubscribe.preferencesPage,
  unsubscribe.preferencesSave,
  // audit log (console admin or owner)
  auditLog.listAuditLog,
  // SSO sign-in for console users (no credential)
  sso.listProviders,
  sso.start,
  sso.callback,
  // console and the pages the system emails link to (no credential: static files)
  ...consolePages.routes,
  // topics and their subscribers (management)
  topics.create,
  topics.list,
  topics.get,
  topics.remove,
  topics.subscribe,
  topics.unsubscribe,
  topics.subscribers,
  topics.contactTopics,
  // broadcasts to a topic or to all contacts (management)
  broadcasts.create,
  broadcasts.list,
  broadcasts.get,
  broadcasts.cancel,
];
